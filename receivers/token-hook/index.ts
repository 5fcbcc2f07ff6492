export { checkTokenHooks, startTokenHooks, decide, type TokenHooks } from './service.js';
export { mountTokenHooks, tokenHookFastPath } from './routes.js';
export { tokenDecisionsPipeline } from './decision-row.js';
