export { tokenHookSchema, tokenHooksSchema, type TokenHookConfig } from './config.js';
export { startTokenHooks, decide, type TokenHook, type TokenHooks, type TokenHooksOptions } from './service.js';
export { mountTokenHooks, tokenHookFastPath } from './routes.js';
export { tokenDecisionsPipeline, mapTokenDecisionRecord, type TokenDecisionRow } from './decision-row.js';
export { checkAnswer, renderAnswer, type RenderedAnswer } from './answer.js';
export { RESERVED_CLAIMS, LIFETIME_MIN_S, LIFETIME_MAX_S, MAX_ANSWER_BYTES, COMMAND } from './protocol.js';
export type { TokenHookCounters } from './telemetry.js';
