/**
 * Who a SET is about, read from its subject identifier (RFC 9493): the SSF
 * `sub_id` claim, or the `subject` member of the event as CAEP's earlier
 * profile put it. Pure; the whole subject is kept as sent beside this summary.
 *
 * Formats read: `email`, `iss_sub`, `opaque`, `phone_number`, `account`
 * (acct: URI), `did`, `uri`, `aliases` (each field from the first alias
 * giving it), and `complex` (its `user`, and its `session` for the session id).
 */

export interface SubjectSummary {
  /** The subject's format (`complex` for a complex subject), or '' when there is none. */
  readonly format: string;
  readonly email: string;
  /** The `iss` and `sub` of an `iss_sub` identifier of the user. */
  readonly iss: string;
  readonly sub: string;
  /** Any other identifier of the user (opaque id, phone number, account or other URI). */
  readonly other: string;
  /** A session the subject names (complex subject's session, opaque or iss_sub). */
  readonly session: string;
}

const NONE: SubjectSummary = { format: '', email: '', iss: '', sub: '', other: '', session: '' };

type Obj = Readonly<Record<string, unknown>>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v.slice(0, 1024) : '');

/** The subject identifier of a SET's event: `sub_id` (SSF 1.0) first, else the event's own `subject`. */
export function subjectOf(claims: Obj, event: Obj): unknown {
  return claims.sub_id ?? event.subject;
}

/** A summary of the user (and session) a subject identifier names. */
export function summarizeSubject(subject: unknown): SubjectSummary {
  if (!isObj(subject)) return NONE;
  const format = str(subject.format);
  if (format === 'complex' || (format === '' && (isObj(subject.user) || isObj(subject.session)))) {
    const user = simple(subject.user);
    const session = isObj(subject.session) ? str(subject.session.id) || str(subject.session.sub) : '';
    return { ...user, format: 'complex', session };
  }
  return simple(subject);
}

function simple(id: unknown): SubjectSummary {
  if (!isObj(id)) return NONE;
  const format = str(id.format);
  switch (format) {
    case 'email':
      return { ...NONE, format, email: str(id.email) };
    case 'iss_sub':
      return { ...NONE, format, iss: str(id.iss), sub: str(id.sub) };
    case 'opaque':
      return { ...NONE, format, other: str(id.id) };
    case 'phone_number':
      return { ...NONE, format, other: str(id.phone_number) };
    case 'account':
    case 'did':
    case 'uri':
      return { ...NONE, format, other: str(id.uri) || str(id.url) };
    case 'aliases': {
      // Several identifiers of one subject: each known field from the first alias that gives it.
      const ids = (Array.isArray(id.identifiers) ? id.identifiers : []).slice(0, 16).map(simple);
      const first = (k: 'email' | 'iss' | 'sub' | 'other') => ids.find((s) => s[k] !== '')?.[k] ?? '';
      const issSub = ids.find((s) => s.sub !== '');
      return {
        ...NONE,
        format,
        email: first('email'),
        iss: issSub?.iss ?? '',
        sub: issSub?.sub ?? '',
        other: first('other'),
      };
    }
    default:
      return { ...NONE, format };
  }
}

/** The user's id for a LogEvent actor: the service's id (iss_sub sub) when known, else the email, else any other. */
export function userId(s: SubjectSummary): string {
  return s.sub || s.email || s.other;
}

/** The user's login for a LogEvent actor's alternateId: the email when known, else the id. */
export function userLogin(s: SubjectSummary): string {
  return s.email || s.sub || s.other;
}
