// Client-side routes on real paths (/search?q=...), so every view can be
// bookmarked and shared; back and forward re-render from the URL.

let handler = () => {};

export function onNavigate(fn) {
  handler = fn;
}

export function navigate(url, { replace = false } = {}) {
  const next = new URL(url, location.href);
  if (next.origin !== location.origin) return;
  const target = next.pathname + next.search + next.hash;
  if (replace) history.replaceState(null, '', target);
  else if (target !== location.pathname + location.search + location.hash) history.pushState(null, '', target);
  handler();
}

/** Same-origin links marked data-nav move without reloading the page. */
export function interceptLinks(root) {
  root.addEventListener('click', (event) => {
    const a = event.target.closest && event.target.closest('a[data-nav]');
    if (!a || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(a.getAttribute('href'));
  });
}

export function link(href, attrs, ...children) {
  const a = document.createElement('a');
  a.setAttribute('href', href);
  a.setAttribute('data-nav', '');
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) a.setAttribute(k, v);
  for (const c of children) a.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return a;
}
