import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasSuspicious, revealText } from '../apps/dashboard/src/app/unicode';
import { axisTicks, kindOf, median } from '../apps/dashboard/src/app/chart';

describe('dashboard: hidden characters made visible', () => {
  it('spells out bidi controls, zero-width and tag characters everywhere', () => {
    assert.equal(revealText('invoice\u202Efdp.exe'), 'invoice⟦U+202E⟧fdp.exe');
    assert.equal(revealText('pay\u200Bpal'), 'pay⟦U+200B⟧pal');
    assert.equal(revealText('a\u2066b\u2069'), 'a⟦U+2066⟧b⟦U+2069⟧');
    assert.equal(revealText('x\u{E0041}'), 'x⟦U+E0041⟧');
    assert.equal(revealText('soft\u00ADhyphen\uFEFF'), 'soft⟦U+00AD⟧hyphen⟦U+FEFF⟧');
    assert.equal(revealText('bell\u0007'), 'bell⟦U+0007⟧');
  });

  it('keeps ordinary text, newlines and non-Latin writing in values', () => {
    assert.equal(revealText('Grüße, 東京 — café\nline two\ttab'), 'Grüße, 東京 — café\nline two\ttab');
    assert.equal(hasSuspicious('Привет'), false);
  });

  it('flags, before the confusables data is loaded, the minority script of a name that mixes scripts', () => {
    assert.equal(revealText('d\u0435lete_note', true), 'd⟦U+0435⟧lete_note'); // Cyrillic е
    assert.equal(revealText('delete_note', true), 'delete_note');
    assert.equal(hasSuspicious('Сlaude', true), true); // Cyrillic С
    assert.equal(hasSuspicious('🤖 مساعد', true), false, 'one script, any script, is shown as written');
  });
});

describe('dashboard: chart helpers', () => {
  it('groups outcomes and takes medians', () => {
    assert.equal(kindOf('ok'), 'ok');
    assert.equal(kindOf('denied'), 'stopped');
    assert.equal(kindOf('expired'), 'stopped');
    assert.equal(kindOf('failed'), 'failed');
    assert.equal(kindOf('refused'), 'failed');
    assert.equal(kindOf('timed_out'), 'failed', 'the add-on did not answer: not a decision');
    assert.equal(median([5, 1, 3]), 3);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(median([]), 0);
  });

  it('labels the x-axis with distinct instants, whatever the period, the hour or the time zone (#43)', () => {
    const HOUR = 3600e3;
    // The periods of GET /api/calls/activity: their span and their buckets' width (calls/activity.ts).
    const periods = { '1h': [HOUR, 5 * 60e3], '24h': [24 * HOUR, HOUR], '7d': [7 * 24 * HOUR, 6 * HOUR], '30d': [30 * 24 * HOUR, 24 * HOUR] } as const;
    const zone = process.env.TZ;
    try {
      // Kolkata's half hours; New York and Lord Howe (half an hour) change their clocks in these weeks.
      for (const tz of ['UTC', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe']) {
        process.env.TZ = tz;
        for (const start of [Date.UTC(2026, 2, 6), Date.UTC(2026, 3, 3), Date.UTC(2026, 9, 30)]) {
          for (let now = start; now < start + 3 * 24 * HOUR; now += 37 * 60e3) {
            for (const [period, [span, step]] of Object.entries(periods)) {
              const to = Math.floor(now / step) * step + step;
              const ticks = axisTicks(to - span, to);
              const at = `${period} to ${new Date(to).toISOString()} in ${tz}: ${JSON.stringify(ticks)}`;
              assert.ok(ticks.length >= 3 && ticks.length <= 7, at);
              assert.equal(new Set(ticks.map((t) => t.label)).size, ticks.length, `labels repeat: ${at}`);
              assert.ok(ticks.every((t, i) => t.x > 0 && t.x <= 1 && (i === 0 || t.x > ticks[i - 1]!.x)), at);
            }
          }
        }
      }
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
});
