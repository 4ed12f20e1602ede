// The web interface's entry point: the page shell, the routes, the session
// guard and the keyboard shortcuts. Plain ES modules, no build step.

import { call, flash, isAdmin, session, signOut, whenSessionEnds } from './api.js';
import { h, replace } from './dom.js';
import { interceptLinks, link, navigate, onNavigate } from './router.js';
import { timeZone } from './time.js';

// Each page's module is fetched when the page is first shown (the browser
// keeps it): the first paint loads the shell and one page, not every page
// (tests/web/test_static.py holds each page's share to a budget).
const pages = {
  login: () => import('./page-login.js').then((m) => m.loginPage),
  search: () => import('./page-events.js').then((m) => m.eventsPage),
  timeline: () => import('./page-timeline.js').then((m) => m.timelinePage),
  summaries: () => import('./page-summaries.js').then((m) => m.summariesPage),
  rules: () => import('./page-rules.js').then((m) => m.rulesPage),
  admin: () => import('./page-admin.js').then((m) => m.adminPage),
  reference: () => import('./page-reference.js').then((m) => m.referencePage),
  sources: () => import('./page-sources.js').then((m) => m.sourcesPage),
  fields: () => import('./page-fields.js').then((m) => m.fieldsPage),
  alerts: () => import('./page-alerts.js').then((m) => m.alertsPage),
};

const app = document.getElementById('app');
const NAV = [
  { path: '/search', label: 'Search' },
  { path: '/timeline', label: 'Timeline' },
  { path: '/summaries', label: 'Summaries' },
  { path: '/rules', label: 'Rules' },
  { path: '/fields', label: 'Fields' },
  { path: '/sources', label: 'Sources' },
  { path: '/alerts', label: 'Alerts', admin: true },
  { path: '/admin', label: 'Admin', admin: true },
  { path: '/reference', label: 'API' },
];

let current = null; // {key, view}

function routeOf(pathname) {
  const parts = pathname.replace(/\/+$/, '').split('/').filter(Boolean);
  const first = parts[0] || '';
  switch (first) {
    case '': return { key: 'home' };
    case 'login': return { key: 'login', load: pages.login, bare: true };
    case 'admin': return { key: `admin/${parts[1] || ''}`, load: pages.admin, section: '/admin' };
    default: return Object.hasOwn(pages, first) ? { key: first, load: pages[first] } : { key: 'missing' };
  }
}

function shell(view, active) {
  const s = session();
  return h('div', { class: 'shell' },
    h('a', { class: 'skip-link', href: '#main' }, 'Skip to content'),
    h('header', { class: 'topbar' },
      link('/search', { class: 'brand', 'aria-label': 'seclake home' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, '◆'), 'seclake'),
      h('nav', { class: 'main-nav', 'aria-label': 'Main' },
        NAV.filter((n) => !n.admin || isAdmin(s)).map((n) =>
          link(n.path, { class: active === n.path ? 'active' : null, 'aria-current': active === n.path ? 'page' : null }, n.label))),
      h('div', { class: 'user-menu' },
        h('span', { class: 'user-name', title: `Signed in as ${s.userName} (${(s.roles || []).join(', ')})` }, s.fullName || s.userName),
        h('span', { class: 'user-zone', title: 'Times are shown in this time zone' }, timeZone()),
        h('button', { type: 'button', id: 'sign-out', onClick: () => signOutEverywhere() }, 'Sign out')),
    ),
    view);
}

/** Sign-out ends the session on the server too, not only in this tab. */
async function signOutEverywhere() {
  try {
    await call('auth/logout', {});
  } catch {
    // Ended already, or the server is unreachable: this tab forgets it anyway.
  }
  signOut();
  flash('You signed out.');
  navigate('/login', { replace: true });
}

let rendering = 0; // the latest render: one that finds another started while its page loaded gives way

async function render() {
  const route = routeOf(location.pathname);
  if (route.key === 'home') return navigate(session() ? '/search' : '/login', { replace: true });
  if (route.key === 'missing') return notFound();
  if (!route.bare && !session()) {
    const next = location.pathname + location.search;
    return navigate(`/login?next=${encodeURIComponent(next)}`, { replace: true });
  }
  // Same page, new URL (a search, back/forward): update it in place.
  if (current && current.key === route.key && current.view && current.view.update) {
    current.view.update();
    return;
  }
  // The page being left goes now, not once the next one's code is here: it must not act meanwhile.
  if (current && current.view && current.view.unmount) current.view.unmount();
  current = { key: route.key, view: null };
  const mine = ++rendering;
  let mount;
  try {
    mount = await route.load();
  } catch (err) {
    if (mine === rendering) loadFailed(err);
    return;
  }
  if (mine !== rendering) return;
  const container = h('div', { class: 'view' });
  replace(app, route.bare ? container : shell(container, route.section || `/${route.key}`));
  current = { key: route.key, view: mount(container) };
}

/** A page's module did not load (the server went away, a new version half deployed). */
function loadFailed(err) {
  if (current && current.view && current.view.unmount) current.view.unmount();
  current = null;
  const page = h('main', { id: 'main', class: 'padded' }, h('h1', null, 'This page did not load'),
    h('p', null, `The browser could not fetch its code: ${String(err && err.message ? err.message : err).slice(0, 200)}. `,
      h('a', { href: location.href }, 'Reload')));
  replace(app, session() ? shell(page, null) : page);
}

/** An address the interface does not know (the server answered it with 404): signed in or not. */
function notFound() {
  if (current && current.view && current.view.unmount) current.view.unmount();
  current = null;
  document.title = 'Page not found · seclake';
  const page = h('main', { id: 'main', class: 'padded not-found' }, h('h1', null, 'Page not found'),
    h('p', null, 'There is no page at ', h('code', null, location.pathname.slice(0, 200)), '.'),
    session() ? link('/search', null, 'Go to the event search') : link('/login', null, 'Sign in'));
  replace(app, session() ? shell(page, null) : page);
}

whenSessionEnds((message) => {
  flash(message);
  const here = location.pathname + location.search;
  navigate(here.startsWith('/login') ? '/login' : `/login?next=${encodeURIComponent(here)}`, { replace: true });
});

document.addEventListener('keydown', (event) => {
  const t = event.target;
  const typing = t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  if (event.key === '/' && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
    const view = current && current.view;
    if (view && view.focusQuery) {
      event.preventDefault();
      view.focusQuery();
    }
  }
});

onNavigate(render);
window.addEventListener('popstate', render);
interceptLinks(document);
render();
