import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasSuspicious, revealText } from '../apps/dashboard/src/app/unicode';
import { kindOf, median } from '../apps/dashboard/src/app/chart';

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
});
