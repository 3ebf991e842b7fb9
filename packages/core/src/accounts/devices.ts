import { randomBytes } from 'node:crypto';
import type { Services } from '../services';

/*
 * Device cookies (OWASP's "Slow down online guessing attacks with device cookies"): a browser that
 * signed in to an account keeps a cookie, MACed with the master key, naming that account's email and
 * a random device id. Its sign-ins to that account count against the device's own allowance, so
 * guesses from elsewhere, from any number of addresses, never lock the owner out of a browser they
 * used before.
 */

/** Kept for a year; a sign-in renews it. */
export const DEVICE_COOKIE_MAX_AGE_SECONDS = 365 * 24 * 3600;

const signed = (email: string, device: string) => `${email}|${device}`;

/** A cookie value for this browser and `email`: the device id it had, or a new one. */
export function deviceCookieFor(svc: Services, email: string, device = randomBytes(12).toString('base64url')): string {
  return `d1.${device}.${svc.secrets.deviceMac(signed(email, device))}`;
}

/** The device id the cookie names, if it was issued to a browser that signed in to `email`. */
export function knownDevice(svc: Services, email: string, cookie: string | undefined): string | undefined {
  if (!cookie || cookie.length > 200) return undefined;
  const [version, device, mac] = cookie.split('.');
  if (version !== 'd1' || !device || !mac || !/^[A-Za-z0-9_-]{16}$/.test(device)) return undefined;
  return svc.secrets.deviceMacValid(signed(email, device), mac) ? device : undefined;
}
