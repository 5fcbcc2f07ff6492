/**
 * What generated events are made of: places, networks, user agents and the
 * background event-type mix, shaped after the corpus (../shared/corpora:
 * logevents.jsonl and the okta_customer-detections logs).
 */
export interface Place {
  readonly city: string;
  readonly state: string;
  readonly country: string;
  readonly postalCode: string;
  readonly lat: number;
  readonly lon: number;
}

export const PLACES: readonly Place[] = [
  {
    city: 'Raleigh',
    state: 'North Carolina',
    country: 'United States',
    postalCode: '27607',
    lat: 35.797,
    lon: -78.6865,
  },
  { city: 'Wichita', state: 'Kansas', country: 'United States', postalCode: '67209', lat: 37.6789, lon: -97.4269 },
  { city: 'New York', state: 'New York', country: 'United States', postalCode: '10001', lat: 40.7506, lon: -73.9972 },
  {
    city: 'San Francisco',
    state: 'California',
    country: 'United States',
    postalCode: '94107',
    lat: 37.7697,
    lon: -122.3933,
  },
  { city: 'Chicago', state: 'Illinois', country: 'United States', postalCode: '60601', lat: 41.8858, lon: -87.6181 },
  { city: 'Austin', state: 'Texas', country: 'United States', postalCode: '78701', lat: 30.2711, lon: -97.7437 },
  { city: 'Toronto', state: 'Ontario', country: 'Canada', postalCode: 'M5H', lat: 43.6532, lon: -79.3832 },
  { city: 'London', state: 'England', country: 'United Kingdom', postalCode: 'EC1A', lat: 51.5164, lon: -0.093 },
  { city: 'Berlin', state: 'Land Berlin', country: 'Germany', postalCode: '10115', lat: 52.532, lon: 13.3849 },
  { city: 'Paris', state: 'Ile-de-France', country: 'France', postalCode: '75001', lat: 48.8606, lon: 2.3376 },
];

/** Places only planted events come from. */
export const FAR_PLACES = {
  moscow: { city: 'Moscow', state: 'Moscow', country: 'Russia', postalCode: '101000', lat: 55.7558, lon: 37.6173 },
  saoPaulo: {
    city: 'Sao Paulo',
    state: 'Sao Paulo',
    country: 'Brazil',
    postalCode: '01000',
    lat: -23.5505,
    lon: -46.6333,
  },
  lagos: { city: 'Lagos', state: 'Lagos', country: 'Nigeria', postalCode: '100001', lat: 6.5244, lon: 3.3792 },
} satisfies Record<string, Place>;

export interface Network {
  readonly asNumber: number;
  readonly asOrg: string;
  readonly isp: string;
  readonly domain: string;
  /** First two octets of the addresses handed out. */
  readonly prefix: string;
}

export const NETWORKS: readonly Network[] = [
  { asNumber: 16591, asOrg: 'google', isp: 'google fiber inc.', domain: 'googlefiber.net', prefix: '136.56' },
  {
    asNumber: 22773,
    asOrg: 'cox communications inc.',
    isp: 'cox communications inc.',
    domain: 'cox.net',
    prefix: '98.164',
  },
  { asNumber: 7922, asOrg: 'comcast', isp: 'comcast cable communications llc', domain: 'comcast.net', prefix: '73.15' },
  { asNumber: 701, asOrg: 'verizon', isp: 'verizon business', domain: 'verizon.net', prefix: '71.163' },
  { asNumber: 3320, asOrg: 'deutsche telekom ag', isp: 'deutsche telekom ag', domain: 'telekom.de', prefix: '91.64' },
  { asNumber: 2856, asOrg: 'british telecommunications plc', isp: 'bt', domain: 'bt.com', prefix: '86.128' },
];

/** A hosting network only attackers use in the generated data. */
export const HOSTING: Network = {
  asNumber: 14061,
  asOrg: 'digitalocean llc',
  isp: 'digitalocean',
  domain: 'digitalocean.com',
  prefix: '167.99',
};

export interface Agent {
  readonly raw: string;
  readonly os: string;
  readonly browser: string;
  readonly device: string;
}

export const AGENTS: readonly Agent[] = [
  {
    raw: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
    os: 'Mac OS X',
    browser: 'CHROME',
    device: 'Computer',
  },
  {
    raw: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0',
    os: 'Windows 10',
    browser: 'EDGE_CHROMIUM',
    device: 'Computer',
  },
  {
    raw: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
    os: 'Mac OS X',
    browser: 'SAFARI',
    device: 'Computer',
  },
  {
    raw: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
    os: 'iOS',
    browser: 'SAFARI',
    device: 'Mobile',
  },
  { raw: 'Okta Verify/9.8.1 (iPhone; iOS 17.4)', os: 'iOS', browser: 'UNKNOWN', device: 'Mobile' },
];

export const APPS = [
  { id: '0oa7s4dqka0lUpE5W4x7', name: 'Google Workspace' },
  { id: '0oa1slack0000000001', name: 'Slack' },
  { id: '0oa1sfdc00000000002', name: 'Salesforce' },
  { id: '0oa1github000000003', name: 'GitHub Enterprise' },
  { id: '0oa1aws0000000000004', name: 'AWS IAM Identity Center' },
] as const;

/** Background event kinds and their weights (sign-ins dominate, as in the corpus). */
export const MIX = [
  ['session_start', 22],
  ['sso', 24],
  ['token_grant', 12],
  ['policy_evaluate', 14],
  ['mfa_ok', 8],
  ['push_sent', 4],
  ['session_end', 6],
  ['signin_failure', 3],
  ['rate_limit_warning', 2],
  ['group_membership', 2],
  ['app_update', 1],
  ['show_password', 2],
] as const;

export type Kind = (typeof MIX)[number][0];
