/**
 * Turns a decision into the bytes of the answer, and checks every answer
 * against the protocol before it leaves (the second line of defence behind
 * the load-time checks: a lookup row or a bug must still never make the
 * service silently drop a patch). `checkAnswer` also reads answers written by
 * others, so conformance tests run the corpus samples through it.
 */
import { BuiltOp, type OpShape, type PatchOp } from './actions.js';
import { parsePatchPath, type ParsedPath } from './pointer.js';
import { COMMAND, MAX_ANSWER_BYTES, isReservedClaim, isValidLifetime, type TokenType } from './protocol.js';
import type { Decision } from './rules.js';

/** What the token being answered for carries: which tokens are being minted. */
export interface Minting {
  readonly id: boolean;
  readonly access: boolean;
}

/** 204 (no change) or 200 with a JSON body already serialised (and, for the audit trail, its commands' JSON). */
export type RenderedAnswer =
  { readonly status: 204 } | { readonly status: 200; readonly body: string; readonly commandsJson?: string };

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
const TYPE_TO_TOKEN = new Map<unknown, TokenType>([
  [COMMAND.id, 'id'],
  [COMMAND.access, 'access'],
]);

/**
 * Paths come from the config (claim pointers built at load), so the same few
 * strings recur on every answer: their parse is kept, bounded in case a bug
 * ever let request data into a path.
 */
const PARSED_PATHS = new Map<string, ParsedPath>();
const MAX_PARSED_PATHS = 4096;

function parsedPath(path: string): ParsedPath {
  let parsed = PARSED_PATHS.get(path);
  if (parsed === undefined) {
    parsed = parsePatchPath(path);
    if (PARSED_PATHS.size >= MAX_PARSED_PATHS) PARSED_PATHS.clear();
    PARSED_PATHS.set(path, parsed);
  }
  return parsed;
}

/**
 * Verdicts worked out once per object and token type. Keys are literal
 * operations, which are prebuilt, frozen and shared (actions.ts), and the
 * shapes of per-request operations: for a claim path nothing about such an
 * operation but the presence of its value can change the verdict (which
 * checkOp tests each time). Other operations built per request are checked
 * each time.
 */
const VERDICTS = new WeakMap<object, { id?: string | null; access?: string | null }>();

/** `asOp` turns the key into the operation to judge, on a miss only: a hit allocates nothing. */
function cachedVerdict<K extends object>(key: K, token: TokenType, asOp: (key: K) => object): string | null {
  let verdicts = VERDICTS.get(key);
  if (verdicts === undefined) VERDICTS.set(key, (verdicts = {}));
  let verdict = verdicts[token];
  if (verdict === undefined) verdict = verdicts[token] = opVerdict(asOp(key), token);
  return verdict;
}

const itself = (op: object): object => op;
/** A shape judged as an operation with some value: a claim path's verdict does not depend on which. */
const withAValue = (shape: OpShape): object => ({ op: shape.op, path: shape.path, value: true });

function shapeVerdict(op: BuiltOp, token: TokenType): string | null {
  const shape = op.shape;
  if (parsedPath(shape.path).kind !== 'claim') return opVerdict(op, token); // the lifetime's verdict reads the value
  return cachedVerdict(shape, token, withAValue);
}

/** Why `op` is unsafe in a patch of `token` (without the "where" prefix), or null. */
function checkOp(op: unknown, token: TokenType): string | null {
  if (op === null || typeof op !== 'object') return 'is not an object';
  if (op instanceof BuiltOp) return op.value === undefined ? `: ${op.op} needs a value` : shapeVerdict(op, token);
  return Object.isFrozen(op) ? cachedVerdict(op, token, itself) : opVerdict(op, token);
}

function opVerdict(op: object, token: TokenType): string | null {
  const { op: kind, path, value } = op as Record<string, unknown>;
  if (!OPS.has(kind as string)) return '.op must be add, replace or remove';
  if (typeof path !== 'string') return '.path must be a string';
  if (kind === 'remove' ? value !== undefined && value !== null : value === undefined) {
    return kind === 'remove' ? ': remove carries no value' : `: ${String(kind)} needs a value`;
  }
  const parsed = parsedPath(path);
  if (parsed.kind === 'invalid') return `: ${parsed.reason}`;
  if (parsed.kind === 'lifetime') {
    if (kind !== 'replace') return ': the lifetime can only be replaced';
    if (!isValidLifetime(value)) return `: lifetime ${JSON.stringify(value)} is outside 300..86400 s`;
    return null;
  }
  if (isReservedClaim(token, parsed.claim))
    return `: claim "${parsed.claim}" is reserved in ${token === 'id' ? 'ID' : 'access'} tokens`;
  if (parsed.appends && kind !== 'add') return ': "-" only appends with add';
  return null;
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
      return token === 'access'
        ? `commands[${c}] patches the access token but the request has no data.access`
        : `commands[${c}] patches the ID token but the request has no data.identity`;
    }
    if (!Array.isArray(cmd.value)) return `commands[${c}].value must be an array`;
    for (let o = 0; o < cmd.value.length; o++) {
      const why = checkOp(cmd.value[o], token);
      if (why !== null) return `commands[${c}].value[${o}]${why.startsWith('is ') ? ` ${why}` : why}`;
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
  const commandsJson = body.commands ? commandsText(body.commands) : undefined;
  const text = commandsJson === undefined ? JSON.stringify(body) : `{"commands":${commandsJson}}`;
  // UTF-8 is at most 3 bytes per UTF-16 unit: most answers skip the byte count.
  if (text.length * 3 >= MAX_ANSWER_BYTES && Buffer.byteLength(text) >= MAX_ANSWER_BYTES) {
    throw new UnsafeAnswerError(
      `answer is ${Buffer.byteLength(text)} bytes, the service accepts under ${MAX_ANSWER_BYTES}`,
    );
  }
  return commandsJson === undefined ? { status: 200, body: text } : { status: 200, body: text, commandsJson };
}

/** The JSON text of literal (frozen, shared) operations, and of per-request operations up to their value, made once. */
const FROZEN_TEXT = new WeakMap<object, string>();

function opText(op: PatchOp): string {
  if (op instanceof BuiltOp) {
    const value = JSON.stringify(op.value) as string | undefined;
    if (value === undefined) return JSON.stringify(op); // no value member, as JSON.stringify leaves it out
    const shape = op.shape;
    let head = FROZEN_TEXT.get(shape);
    if (head === undefined) FROZEN_TEXT.set(shape, (head = `${JSON.stringify(shape).slice(0, -1)},"value":`));
    return `${head}${value}}`;
  }
  if (!Object.isFrozen(op)) return JSON.stringify(op);
  let text = FROZEN_TEXT.get(op);
  if (text === undefined) FROZEN_TEXT.set(op, (text = JSON.stringify(op)));
  return text;
}

/** `JSON.stringify(commands)`, byte for byte, with literal operations' text reused. */
function commandsText(commands: readonly AnswerCommand[]): string {
  let out = '[';
  for (let c = 0; c < commands.length; c++) {
    const cmd = commands[c]!;
    out += `${c === 0 ? '' : ','}{"type":${JSON.stringify(cmd.type)},"value":[`;
    for (let o = 0; o < cmd.value.length; o++) out += (o === 0 ? '' : ',') + opText(cmd.value[o]!);
    out += ']}';
  }
  return `${out}]`;
}

/** The deny answer used by the error policy. */
export function denyAnswer(summary: string): RenderedAnswer {
  return { status: 200, body: JSON.stringify({ error: { errorSummary: summary } }) };
}
