// Helpers both pages use: fetching JSON, building elements, formatting. No libraries.
"use strict";

const ks = {
  // GET a relative URL as JSON; rejects with the server's error text.
  async json(url) {
    const response = await fetch(url, { cache: "no-store" });
    const body = await response.json().catch(() => ({}));
    if (!response.ok && response.status !== 404) {
      throw new Error(body.error || `${response.status} ${response.statusText}`);
    }
    return body;
  },
  // An element with attributes and children (strings become text, never HTML).
  el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  },
  badge(text, kind) {
    return ks.el("span", { class: `badge ${kind || text}` }, text);
  },
  podLink(name) {
    return ks.el("a", { href: `pod?pod=${encodeURIComponent(name)}` }, name);
  },
  fixed(value, digits) {
    return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
  },
  seconds(value) {
    if (value === null || value === undefined) return "–";
    if (value < 0.001) return `${(value * 1e6).toFixed(0)} µs`;
    if (value < 1) return `${(value * 1e3).toFixed(2)} ms`;
    return `${value.toFixed(2)} s`;
  },
  clock(epochSeconds) {
    return new Date(epochSeconds * 1000).toLocaleTimeString();
  },
  // Replace a table body's rows; an empty list shows `empty` in one row.
  fill(tbody, rows, columns, empty) {
    tbody.replaceChildren(...(rows.length ? rows : [
      ks.el("tr", {}, ks.el("td", { colspan: columns, class: "empty" }, empty)),
    ]));
  },
  // Poll `load` every `period` ms, the next call only after the previous one ended, so a
  // slow server is never asked twice at once. The status line says when data is stale.
  poll(load, period) {
    const status = document.getElementById("status");
    const tick = async () => {
      try {
        await load();
        status.textContent = `updated ${new Date().toLocaleTimeString()}`;
        status.classList.remove("stale");
      } catch (error) {
        status.textContent = `cannot update: ${error.message}`;
        status.classList.add("stale");
      }
      setTimeout(tick, period);
    };
    tick();
  },
};
