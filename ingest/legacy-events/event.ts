/**
 * A legacy Events API event (`/api/v1/events`): only what hooklog relies on
 * is required — `eventId` (the dedupe key, `tev…`) and `published`; the rest
 * is kept losslessly in the raw JSON. Event ids do not map to System Log uuids.
 */
import { z } from 'zod';
import { isoTimestamp } from '../../schemas/logevent.js';

export const legacyEventSchema = z.looseObject({
  eventId: z.string().min(1).max(256),
  published: isoTimestamp,
});

/** The same checks, without copying the rest of the event into the result (see `logEventFields`). */
export const legacyEventFields = z.object(legacyEventSchema.shape);
