/** One client IP across the orgs you may see: who used it, in which orgs, with what outcome. */
import { eqFilter, eventsHref, getJson, params, seg, userHref, type Me } from '../api.js';
import { SearchThese } from './user.js';
import { Chart, epochS } from '../chart.js';
import { ErrorBox, Keep, Loading, RangeForm, useData, Value } from '../ui.js';
import { Breakdown, type Figure, type TimePoint } from './figures.js';

interface IpData {
  /** The address (the URL's reference resolved). */
  ip: string;
  since: string;
  until: string;
  signIns: TimePoint[];
  org: Figure[];
  user: Figure[];
  outcome: Figure[];
  event_type: Figure[];
  country: Figure[];
  network: Figure[];
}

export function IpPage({ ip, me }: { ip: string; me: Me }) {
  const p = params();
  const { data, error } = useData(
    () => getJson<IpData>(`/console/api/ips/${seg(ip)}`, { org: p.org, since: p.since, until: p.until }),
    location.search,
  );
  const range = data ? { since: `${data.since.replace(' ', 'T')}Z`, until: `${data.until.replace(' ', 'T')}Z` } : {};
  // The events page reads one org at a time: the page's org, else the org of the row (org breakdown), else yours.
  const events = (org: string, filter: Record<string, string>) =>
    eventsHref({ org, ip: data?.ip ?? ip, ...range, ...filter });
  const org = p.org ?? me.orgs[0] ?? '';
  return (
    <section>
      <h1>
        IP <Value v={data?.ip ?? ip} />
      </h1>
      <RangeForm p={p}>
        <Keep p={p} names={['org']} />
      </RangeForm>
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="the IP" />}
      {data && (
        <>
          <Chart
            title="Sign-ins from this IP"
            data={{
              x: data.signIns.map((t) => epochS(t.t)),
              series: [
                { label: 'success', values: data.signIns.map((t) => Number(t.success)) },
                { label: 'failure', values: data.signIns.map((t) => Number(t.failure)) },
              ],
            }}
          />
          <p>
            <SearchThese org={org} filter={eqFilter('client.ipAddress', data.ip)} range={range} />
            {p.org ? '' : <span class="muted"> (in org {org})</span>}
          </p>
          <div class="grid">
            <Breakdown caption="Orgs" rows={data.org} link={(v) => events(v, {})} />
            <Breakdown
              caption="Users"
              rows={data.user}
              link={(v) => events(org, { user: v })}
              page={(v) => (v && org ? userHref(org, v) : undefined)}
            />
            <Breakdown caption="Outcomes" rows={data.outcome} link={(v) => events(org, { outcome: v })} />
            <Breakdown caption="Event types" rows={data.event_type} link={(v) => events(org, { event_type: v })} />
            <Breakdown caption="Countries" rows={data.country} link={(v) => events(org, { country: v })} />
            <Breakdown caption="Networks" rows={data.network} link={(v) => events(org, { network: v })} />
          </div>
        </>
      )}
    </section>
  );
}
