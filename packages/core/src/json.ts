/**
 * A verb's answer as a client reads it once the API has sent it as JSON: a Date arrives as its ISO
 * string. The API's answer types (api-shapes.ts) are verbs' return types through this, never copies.
 */
export type Json<T> = T extends Date
  ? string
  : T extends ReadonlyArray<infer U>
    ? Json<U>[]
    : T extends object
      ? { [K in keyof T]: Json<T[K]> }
      : T;
