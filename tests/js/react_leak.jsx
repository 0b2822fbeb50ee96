// A React app with a component leak, for heapdb's unmounted-fiber inspection (bundled by
// heapgen.chromium.write_react_snapshot with esbuild, as a development build so that React's
// constructor names and component names survive).
//
// The app shows PANELS panels; window.closePanels() unmounts them all. Each LeakyPanel subscribes
// to a global store and never unsubscribes: the store keeps its state setter, which keeps the
// panel's fiber (and what the fiber still holds) alive after it unmounted. CleanPanel unsubscribes
// in its effect's cleanup and is freed. The Footer stays mounted, and so does the Catalog, whose
// hooks (a large state, a memo over it, a ref) heapdb's memory-by-hook inspection measures.

import React, { useEffect, useMemo, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { flushSync } from 'react-dom';

const PANELS = Number(document.body.dataset.panels || 3);
const ROWS = Number(document.body.dataset.rows || 10);
const ITEMS = 200; // the Catalog's state

window.store = {
  listeners: new Set(),
  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  },
};

function Row({ label }) {
  return <li className="row">{label}</li>;
}

function LeakyPanel({ id }) {
  const [updates, setUpdates] = useState(0);
  useEffect(() => {
    window.store.subscribe(() => setUpdates((n) => n + 1)); // the leak: no cleanup returned
  }, []);
  return (
    <section className="panel">
      <h2>
        Leaky panel {id} ({updates})
      </h2>
      <ul>
        {Array.from({ length: ROWS }, (_, i) => (
          <Row key={i} label={`${id}-${i}`} />
        ))}
      </ul>
    </section>
  );
}

function CleanPanel() {
  const [updates, setUpdates] = useState(0);
  useEffect(() => window.store.subscribe(() => setUpdates((n) => n + 1)), []);
  return <section className="panel">Clean panel ({updates})</section>;
}

function Footer() {
  return <footer>footer</footer>;
}

function Catalog() {
  const [items] = useState(() => Array.from({ length: ITEMS }, (_, i) => ({ id: i, title: `item ${i}` })));
  const byId = useMemo(() => new Map(items.map((item) => [item.id, item])), [items]);
  const seen = useRef(new Array(ITEMS).fill(0));
  return (
    <p className="catalog">
      {byId.size} items, {seen.current.length} counters
    </p>
  );
}
Catalog.displayName = 'Catalog'; // memlab names a function component by its displayName only

function App() {
  const [open, setOpen] = useState(true);
  window.closePanels = () => flushSync(() => setOpen(false));
  return (
    <main>
      {open && Array.from({ length: PANELS }, (_, i) => <LeakyPanel key={i} id={i} />)}
      {open && <CleanPanel />}
      <Catalog />
      <Footer />
    </main>
  );
}

createRoot(document.getElementById('root')).render(<App />);
window.mounted = () => document.querySelectorAll('.panel').length === PANELS + 1;
