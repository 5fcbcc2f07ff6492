/**
 * Turns a decision into the bytes of the answer, and checks every answer
 * against the protocol before it leaves (the second line of defence behind
 * the load-time checks: a lookup row or a bug must still never make the
 * service silently drop a patch). `checkAnswer` also reads answers written by
 * others, so conformance tests run the corpus samples through it.
 */
import type { PatchOp } from './actions.js';
import { parsePatchPath } from './pointer.js';
import { COMMAND, MAX_ANSWER_BYTES, isReservedClaim, isValidLifetime, type TokenType } from './protocol.js';
import type { Decision } from './rules.js';

/** What the token being answered for carries: which tokens are being minted. */
export interface Minting {
  readonly id: boolean;
  readonly access: boolean;
}

/** 204 (no change) or 200 with a JSON body already serialised (and, for the audit trail, its commands' JSON). */
export type RenderedAnswer =
  | { readonly status: 204 }
  | { readonly status: 200; readonly body: string; readonly commandsJson?: string };

export interface AnswerCommand {
  readonly type: (typeof COMMAND)[TokenType];
  readonly value: readonly PatchOp[];
}

export interface AnswerBody {
  readonly commands?: readonly AnswerCommand[];
  readonly error?: { readonly errorSummary: string };
}

/** Raised when an answer breaks the protocol; the hook's error policy decides what goes out instead. */
export class UnsafeAnswerError extends Error {
  constructor(reason: string) {
    super(`unsafe answer: ${reason}`);
    this.name = 'UnsafeAnswerError';
  }
}

export const NO_CHANGE: RenderedAnswer = Object.freeze({ status: 204 });

/** The answer object of a decision, or null when nothing changes (204). */
export function answerBody(decision: Decision): AnswerBody | null {
  if (decision.deny !== undefined) return { error: { errorSummary: decision.deny } };
  const commands: AnswerCommand[] = [];
  if (decision.idOps.length > 0) commands.push({ type: COMMAND.id, value: decision.idOps });
  if (decision.accessOps.length > 0) commands.push({ type: COMMAND.access, value: decision.accessOps });
  return commands.length === 0 ? null : { commands };
}

const OPS = new Set(['add', 'replace', 'remove']);
const TYPE_TO_TOKEN = new Map<unknown, TokenType>([[COMMAND.id, 'id'], [COMMAND.access, 'access']]);

function checkOp(op: unknown, token: TokenType, where: string): string | undefined {
  if (op === null || typeof op !== 'object') return `${where} is not an object`;
  const { op: kind, path, value } = op as Record<string, unknown>;
  if (!OPS.has(kind as string)) return `${where}.op must be add, replace or remove`;
  if (typeof path !== 'string') return `${where}.path must be a string`;
  if (kind === 'remove' ? value !== undefined && value !== null : value === undefined) {
    return kind === 'remove' ? `${where}: remove carries no value` : `${where}: ${String(kind)} needs a value`;
  }
  const parsed = parsePatchPath(path);
  if (parsed.kind === 'invalid') return `${where}: ${parsed.reason}`;
  if (parsed.kind === 'lifetime') {
    if (kind !== 'replace') return `${where}: the lifetime can only be replaced`;
    if (!isValidLifetime(value)) return `${where}: lifetime ${JSON.stringify(value)} is outside 300..86400 s`;
    return undefined;
  }
  if (isReservedClaim(token, parsed.claim)) return `${where}: claim "${parsed.claim}" is reserved in ${token === 'id' ? 'ID' : 'access'} tokens`;
  if (parsed.appends && kind !== 'add') return `${where}: "-" only appends with add`;
  return undefined;
}

/**
 * Why `answer` would be refused or silently voided by the service, or
 * undefined when it is safe for a request minting `minting`. Size is checked
 * by the caller on the serialised bytes.
 */
export function checkAnswer(answer: unknown, minting: Minting): string | undefined {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return 'answer is not a JSON object';
  const { commands, error } = answer as Record<string, unknown>;
  if (error !== undefined) {
    if (error === null || typeof error !== 'object') return 'error must be an object';
    const summary = (error as Record<string, unknown>).errorSummary;
    if (summary !== undefined && typeof summary !== 'string') return 'error.errorSummary must be a string';
  }
  if (commands === undefined) return undefined;
  if (!Array.isArray(commands)) return 'commands must be an array';
  for (let c = 0; c < commands.length; c++) {
    const cmd = commands[c] as Record<string, unknown> | null;
    if (cmd === null || typeof cmd !== 'object') return `commands[${c}] is not an object`;
    const token = TYPE_TO_TOKEN.get(cmd.type);
    if (!token) return `commands[${c}].type ${JSON.stringify(cmd.type)} is not ${COMMAND.id} or ${COMMAND.access}`;
    if (!minting[token]) {
      return token === 'access' ? `commands[${c}] patches the access token but the request has no data.access` : `commands[${c}] patches the ID token but the request has no data.identity`;
    }
    if (!Array.isArray(cmd.value)) return `commands[${c}].value must be an array`;
    for (let o = 0; o < cmd.value.length; o++) {
      const why = checkOp(cmd.value[o], token, `commands[${c}].value[${o}]`);
      if (why) return why;
    }
  }
  return undefined;
}

/** Serialises and checks a decision's answer; throws UnsafeAnswerError instead of letting a bad one out. */
export function renderAnswer(decision: Decision, minting: Minting): RenderedAnswer {
  const body = answerBody(decision);
  if (body === null) return NO_CHANGE;
  const why = checkAnswer(body, minting);
  if (why) throw new UnsafeAnswerError(why);
  // The commands are serialised once: the answer and the audit record share the text.
  const commandsJson = body.commands ? JSON.stringify(body.commands) : undefined;
  const text = commandsJson === undefined ? JSON.stringify(body) : `{"commands":${commandsJson}}`;
  // UTF-8 is at most 3 bytes per UTF-16 unit: most answers skip the byte count.
  if (text.length * 3 >= MAX_ANSWER_BYTES && Buffer.byteLength(text) >= MAX_ANSWER_BYTES) {
    throw new UnsafeAnswerError(`answer is ${Buffer.byteLength(text)} bytes, the service accepts under ${MAX_ANSWER_BYTES}`);
  }
  return commandsJson === undefined ? { status: 200, body: text } : { status: 200, body: text, commandsJson };
}

/** The deny answer used by the error policy. */
export function denyAnswer(summary: string): RenderedAnswer {
  return { status: 200, body: JSON.stringify({ error: { errorSummary: summary } }) };
}
