/**
 * The console app: one page per URL, picked from `location.pathname`. Links
 * are ordinary links and filters ordinary GET forms, so every page is a URL
 * (bookmarkable, testable alone) and the keyboard works as the browser's does.
 */
import { render } from 'preact';
import type { ComponentChildren } from 'preact';
import { getJson, postJson, type Me } from './api.js';
import { ErrorBox, label, Loading, useData } from './ui.js';
import { AlertsPage } from './pages/alerts.js';
import { AlertPage } from './pages/alert.js';
import { UserPage } from './pages/user.js';
import { IpPage } from './pages/ip.js';
import { EventsPage } from './pages/events.js';
import { SearchPage } from './pages/search.js';
import { QueriesPage, QueryPage } from './pages/queries.js';
import { CoveragePage, StatusPage } from './pages/operations.js';

const NAV: ReadonlyArray<[string, string]> = [
  ['/console/alerts', 'Alerts'],
  ['/console/search', 'Search'],
  ['/console/queries', 'Queries'],
  ['/console/status', 'Status'],
  ['/console/coverage', 'Coverage'],
];

function route(path: string, me: Me): ComponentChildren {
  const parts = path.split('/').slice(2).map(decodeURIComponent);
  const [section, a, b] = parts;
  switch (section) {
    case 'alerts':
      return a ? <AlertPage id={a} me={me} /> : <AlertsPage me={me} />;
    case 'users':
      return <UserPage org={a ?? ''} user={b ?? ''} />;
    case 'ips':
      return <IpPage ip={a ?? ''} me={me} />;
    case 'events':
      return <EventsPage />;
    case 'search':
      return <SearchPage me={me} />;
    case 'queries':
      return a ? <QueryPage name={a} me={me} /> : <QueriesPage />;
    case 'status':
      return <StatusPage />;
    case 'coverage':
      return <CoveragePage me={me} />;
    default:
      return <p>Not found.</p>;
  }
}

function App() {
  const me = useData(() => getJson<Me>('/console/api/me'), 'me');
  const signOut = async () => {
    if (!me.data) return;
    await postJson('/console/auth/logout', me.data, {}).catch(() => undefined);
    location.assign('/console/auth/login');
  };
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <nav aria-label="Console">
          <strong>hooklog</strong>
          {NAV.map(([href, label]) => (
            <a href={href} aria-current={location.pathname.startsWith(href) ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        {me.data && (
          <div class="who">
            <span>
              {label(me.data.name, 100)} ({me.data.role}; {label(me.data.orgs.join(', '), 200)})
            </span>
            <button type="button" onClick={signOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {me.error ? (
          <ErrorBox error={me.error} />
        ) : me.data ? (
          route(location.pathname, me.data)
        ) : (
          <Loading what="your session" />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
