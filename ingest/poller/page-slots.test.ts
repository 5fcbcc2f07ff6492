import { describe, expect, it } from 'vitest';
import { PageSlots } from './page-slots.js';

describe('PageSlots', () => {
  it('grants up to its size, then hands slots to waiters in arrival order', async () => {
    const slots = new PageSlots(2);
    const a = slots.tryAcquire()!;
    const b = await slots.acquire();
    expect(slots.held).toBe(2);
    expect(slots.tryAcquire()).toBeUndefined();
    const order: string[] = [];
    const c = slots.acquire().then((r) => (order.push('c'), r));
    const d = slots.acquire().then((r) => (order.push('d'), r));
    expect(slots.waiting).toBe(2);
    a();
    a(); // a second release of one slot frees nothing more
    const rc = await c;
    expect(order).toEqual(['c']);
    expect(slots.held).toBe(2);
    // b's slot goes straight to d, the waiter: a tryAcquire in between finds none.
    b();
    expect(slots.tryAcquire()).toBeUndefined();
    const rd = await d;
    expect(order).toEqual(['c', 'd']);
    rc();
    rd();
    expect(slots.held).toBe(0);
    expect(slots.waiting).toBe(0);
  });

  it('an aborted waiter leaves the queue with the signal reason and takes no slot', async () => {
    const slots = new PageSlots(1);
    const held = slots.tryAcquire()!;
    const stop = new AbortController();
    const waiting = slots.acquire(stop.signal);
    expect(slots.waiting).toBe(1);
    stop.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    expect(slots.waiting).toBe(0);
    held();
    expect(slots.held).toBe(0);
    await expect(slots.acquire(stop.signal)).resolves.toBeTypeOf('function'); // a free slot needs no wait
    await expect(new PageSlots(1).acquire(AbortSignal.abort(new Error('gone')))).resolves.toBeTypeOf('function');
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new PageSlots(0)).toThrow(/positive integer/);
    expect(() => new PageSlots(1.5)).toThrow(/positive integer/);
  });
});
