// heapdb's pages, a little quicker with JavaScript: the object page's trees open in place (the
// level fetched as a server-rendered fragment, the address bar kept to the same URL the links
// lead to without JavaScript), arrow keys walk a tree as WAI-ARIA's tree pattern says, and "/"
// goes to the search box. Every view works without this module: each toggle is also a link.

const OPEN = "open";

function treeItems(tree) {
  // The rows a person can reach now: those whose every enclosing row is open.
  return [...tree.querySelectorAll("li.node, li.more")].filter((li) => !li.closest("ul[hidden]"));
}

function focusRow(tree, li) {
  for (const other of tree.querySelectorAll('[tabindex="0"]')) other.tabIndex = -1;
  li.tabIndex = 0;
  li.focus();
}

function keepInUrl(li, opening) {
  // The same query the server's toggle links carry: `open` lists the open rows' paths.
  const url = new URL(location.href);
  const mine = li.dataset.open;
  const [direction, path] = mine.split(":");
  let values = url.searchParams.getAll(OPEN).filter((value) => {
    const [d, p] = value.split(":");
    return !(d === direction && (p === path || p.startsWith(path + ".")));
  });
  if (opening) {
    values = values.filter((value) => !mine.startsWith(value + "."));
    values.push(mine);
  } else if (path.includes(".")) {
    values.push(`${direction}:${path.slice(0, path.lastIndexOf("."))}`);
  }
  url.searchParams.delete(OPEN);
  for (const value of [...new Set(values)].sort()) url.searchParams.append(OPEN, value);
  history.replaceState(null, "", url);
}

function enhance(list) {
  // Tree semantics for what the server rendered (or a fragment just inserted).
  for (const li of list.querySelectorAll("li")) {
    li.setAttribute("role", "treeitem");
    if (!li.hasAttribute("tabindex")) li.tabIndex = -1;
  }
  for (const group of list.querySelectorAll("ul")) group.setAttribute("role", "group");
}

async function fetchRows(url) {
  const answer = await fetch(url, { headers: { Accept: "text/html" } });
  if (!answer.ok) throw new Error(`${url}: ${answer.status}`);
  const holder = document.createElement("template");
  holder.innerHTML = await answer.text();
  return holder.content;
}

async function toggle(tree, li, opening) {
  const link = li.querySelector(":scope > .row > a.toggle");
  if (!link || li.getAttribute("aria-expanded") === String(opening)) return;
  let group = li.querySelector(":scope > ul");
  if (opening && !group) {
    li.setAttribute("aria-busy", "true");
    const rows = await fetchRows(link.dataset.fragment);
    group = document.createElement("ul");
    group.append(rows);
    enhance(group);
    group.setAttribute("role", "group");
    li.append(group);
    li.removeAttribute("aria-busy");
  }
  if (group) group.hidden = !opening;
  li.setAttribute("aria-expanded", String(opening));
  keepInUrl(li, opening);
}

async function more(tree, li) {
  const link = li.querySelector("a");
  const rows = await fetchRows(link.dataset.fragment);
  const first = rows.querySelector("li");
  const list = li.parentElement;
  enhance(rows);
  list.insertBefore(rows, li);
  li.remove();
  if (first) focusRow(tree, first);
}

function onKey(tree, event) {
  const li = event.target.closest("li[role=treeitem]");
  if (!li || event.altKey || event.ctrlKey || event.metaKey) return;
  const rows = treeItems(tree);
  const at = rows.indexOf(li);
  const expanded = li.getAttribute("aria-expanded");
  const parent = li.parentElement.closest("li[role=treeitem]");
  const moves = {
    ArrowDown: () => rows[at + 1] && focusRow(tree, rows[at + 1]),
    ArrowUp: () => rows[at - 1] && focusRow(tree, rows[at - 1]),
    Home: () => focusRow(tree, rows[0]),
    End: () => focusRow(tree, rows[rows.length - 1]),
    ArrowRight: () => {
      if (expanded === "false") toggle(tree, li, true);
      else if (expanded === "true") {
        const child = li.querySelector(":scope > ul > li");
        if (child) focusRow(tree, child);
      }
    },
    ArrowLeft: () => {
      if (expanded === "true") toggle(tree, li, false);
      else if (parent) focusRow(tree, parent);
    },
    Enter: () => {
      if (li.classList.contains("more")) more(tree, li);
      else li.querySelector(":scope > .row a.object")?.click();
    },
  };
  if (event.target !== li && event.key === "Enter") return; // a link inside the row answers itself
  if (moves[event.key]) {
    event.preventDefault();
    moves[event.key]();
  }
}

function setUpTree(tree) {
  tree.setAttribute("role", "tree");
  enhance(tree);
  const first = tree.querySelector("li");
  if (first) first.tabIndex = 0;
  tree.addEventListener("keydown", (event) => onKey(tree, event));
  tree.addEventListener("click", (event) => {
    const link = event.target.closest("a");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const li = link.closest("li");
    if (link.classList.contains("toggle") && li.classList.contains("node")) {
      event.preventDefault();
      toggle(tree, li, li.getAttribute("aria-expanded") !== "true");
    } else if (li.classList.contains("more") && link.dataset.fragment) {
      event.preventDefault();
      more(tree, li);
    }
  });
}

function searchShortcut(event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest("input, textarea, select, [contenteditable]")) return;
  const box = document.getElementById("search-text");
  if (box) {
    event.preventDefault();
    box.focus();
    box.select();
  }
}

for (const tree of document.querySelectorAll("ul.reftree")) setUpTree(tree);
document.addEventListener("keydown", searchShortcut);
