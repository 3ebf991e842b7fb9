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
body{font:16px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;background:#f5f5f7;color:#1d1d1f}
main{max-width:28rem;margin:8vh auto;background:#fff;border-radius:12px;padding:2rem;box-shadow:0 1px 4px rgba(0,0,0,.08)}
h1{font-size:1.35rem;margin:0 0 1rem}
.muted{color:#6e6e73;font-size:.9rem}
.badge{display:inline-block;font-size:.75rem;padding:.1rem .45rem;border-radius:999px;background:#fff4d6;color:#8a5a00;border:1px solid #f0d58a;vertical-align:middle}
.error{background:#fdecea;color:#8a1c12;padding:.75rem 1rem;border-radius:8px}
.warn{background:#fff8e1;color:#6b4e00;padding:.75rem 1rem;border-radius:8px}
ul{padding-left:1.2rem}
label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input[type=email],input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;border:1px solid #c7c7cc;border-radius:8px;font:inherit}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{flex:1;padding:.7rem;border-radius:8px;border:1px solid #c7c7cc;background:#fff;font:inherit;cursor:pointer}
button.primary{background:#0a66ff;border-color:#0a66ff;color:#fff}
code{word-break:break-all;font-size:.85rem}
`;
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

/** No script, no framing, no foreign resources: the only inline style is ours, by hash. */
const PAGE_CSP = `default-src 'none'; style-src ${STYLE_HASH}; img-src 'self'; base-uri 'none'; frame-ancestors 'none'`;

/**
 * Headers every OAuth HTML page carries (and the redirects that answer its forms). The referrer
 * policy is `same-origin`, not the service-wide `no-referrer`: a browser then sends our real Origin
 * when these pages post their forms (with `no-referrer` it sends `Origin: null`), while the redirect
 * to the app and every other site still get no Referer, so the request's query never leaves us.
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
<title>${title} · Toolport</title>
<style>${raw(STYLE)}</style>
</head>
<body><main>${body}</main></body>
</html>`;
  return c.html(doc, status);
}
