import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { html, raw } from 'hono/html';
import type { AppEnv } from '../http/env';

/**
 * What hono/html's tag builds: every interpolated value escaped (& < > " ') unless it is itself
 * `html` or `raw`; a promise only if a value were one, which none of our pages' values are.
 */
type Html = ReturnType<typeof html>;

const STYLE = `
:root{--bg:#f5f6f8;--surface:#fff;--text:#182032;--muted:#566074;--border:#dfe3ea;--accent:#2b55c8;--accent-hover:#2248ad;--accent-soft:#eaf0fd;--danger:#b42318;--danger-soft:#fef3f2;--danger-border:#fecdca;--warn:#8a3a0b;--warn-soft:#fffaeb;--warn-border:#fedf89;--control-border:#c9cfda;--input-bg:#fff;--input-border:#b9c1ce;--glow:#e6ecfb;--focus:#f59e0b;color-scheme:light;
font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;color:var(--text);background:var(--bg);line-height:1.5;-webkit-text-size-adjust:100%}
@media (prefers-color-scheme:dark){:root{color-scheme:dark;--bg:#0f1420;--surface:#171d2b;--text:#e6e9f0;--muted:#a3acbd;--border:#2c3446;--accent:#7b9cff;--accent-hover:#9bb4ff;--accent-soft:#1c2745;--danger:#ff8a80;--danger-soft:#3a1a1a;--danger-border:#6b2b2b;--warn:#f5b35c;--warn-soft:#33260f;--warn-border:#6b4e1c;--control-border:#3b4559;--input-bg:#10151f;--input-border:#4a5469;--glow:#18223b}.primary{color:#0b0f19!important}}
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:1.5rem;background:radial-gradient(circle at 20% 0%,var(--glow),var(--bg) 55%);overflow-wrap:break-word}
main{width:100%;max-width:400px;background:var(--surface);border:1px solid var(--border);border-radius:14px;padding:2rem;box-shadow:0 10px 30px rgba(16,24,40,.08)}
.brand{display:flex;align-items:center;gap:.6rem;font-weight:650;font-size:1.25rem;margin-bottom:1.5rem}
h1{font-size:1.4rem;font-weight:650;letter-spacing:-.01em;line-height:1.25;margin:0 0 .75rem}
p{margin:0 0 .75rem}
.muted{color:var(--muted);font-size:.9rem}
.badge{display:inline-block;font-size:.75rem;font-weight:600;padding:.1rem .5rem;border-radius:999px;background:var(--warn-soft);color:var(--warn);vertical-align:middle;white-space:nowrap}
.error{background:var(--danger-soft);border:1px solid var(--danger-border);color:var(--danger);padding:.7rem .9rem;border-radius:8px;font-size:.93rem}
.warn{background:var(--warn-soft);border:1px solid var(--warn-border);color:var(--warn);padding:.7rem .9rem;border-radius:8px;font-size:.93rem}
ul{padding-left:1.2rem;margin:0 0 .75rem}
label{display:block;margin:.75rem 0 .3rem;font-weight:560;font-size:.92rem}
input[type=email],input[type=password]{width:100%;min-height:2.6rem;padding:.55rem .7rem;border:1px solid var(--input-border);border-radius:8px;font:inherit;color:var(--text);background:var(--input-bg)}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{flex:1;min-height:2.5rem;padding:.45rem 1rem;border-radius:8px;border:1px solid var(--control-border);background:var(--surface);color:var(--text);font:inherit;font-weight:560;cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
a.button{display:flex;align-items:center;justify-content:center;min-height:2.75rem;padding:.45rem 1rem;border-radius:8px;border:1px solid var(--control-border);color:var(--text);font-weight:560;text-decoration:none}
a.button:hover{background:var(--glow)}
button.primary:hover{background:var(--accent-hover)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
code{font-size:.85rem}
.ident .long{overflow-wrap:anywhere}
fieldset{border:1px solid var(--border);border-radius:10px;padding:.35rem .9rem .5rem;margin:0 0 .75rem;min-width:0}
legend{font-weight:650;padding:0 .3rem}
label.check{display:flex;gap:.6rem;align-items:flex-start;min-height:1.75rem;margin:.35rem 0;font-weight:450}
label.check input{flex:none;width:1.15rem;height:1.15rem;margin:.2rem 0 0;accent-color:var(--accent)}
`;
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

/** No script, no framing, no foreign resources: the only inline style is ours, by hash. */
const PAGE_CSP = `default-src 'none'; style-src ${STYLE_HASH}; img-src 'self'; base-uri 'none'; frame-ancestors 'none'`;

/**
 * `same-origin`, not `no-referrer`: our forms then post with a real Origin, while other sites still
 * get no Referer, so the request's query never leaves us.
 */
export function setPageHeaders(c: Context<AppEnv>) {
  c.header('Referrer-Policy', 'same-origin');
  c.header('Content-Security-Policy', PAGE_CSP);
  c.header('X-Frame-Options', 'DENY');
  c.header('Cache-Control', 'no-store');
  c.header('Pragma', 'no-cache');
}

export function renderPage(c: Context<AppEnv>, status: ContentfulStatusCode, title: string, body: Html) {
  setPageHeaders(c);
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="/icon.svg" type="image/svg+xml">
<title>${title} · Toolport</title>
<style>${raw(STYLE)}</style>
</head>
<body><main><div class="brand"><img src="/icon.svg" alt="" width="32" height="32"><span>Toolport</span></div>${body}</main></body>
</html>`;
  return c.html(doc, status);
}
