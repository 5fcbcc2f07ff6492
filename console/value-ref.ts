/**
 * A value from a URL as a condition: the value itself, or a reference
 * (`sha256:<hex>`, console/display.ts `linkValue`) to a value too long for a
 * URL, matched by the hash of the column's bytes. So a 1 MB login links to its
 * user page with a 71-character URL, and the API finds the events by it.
 */
import { isRef } from './display.js';

/** `expr` equals the URL value: SQL with one bound parameter `name`, and that parameter's value. */
export function valueIs(expr: string, name: string, value: string): { sql: string; param: string } {
  return isRef(value)
    ? { sql: `lower(hex(SHA256(${expr}))) = {${name}:String}`, param: value.slice('sha256:'.length) }
    : { sql: `${expr} = {${name}:String}`, param: value };
}

/** An element of the array `expr` equals the URL value. */
export function arrayHas(expr: string, name: string, value: string): { sql: string; param: string } {
  return isRef(value)
    ? { sql: `arrayExists(x -> lower(hex(SHA256(x))) = {${name}:String}, ${expr})`, param: value.slice(7) }
    : { sql: `has(${expr}, {${name}:String})`, param: value };
}
