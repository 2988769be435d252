// The overview: polls api/overview and draws the queue, QoS, gangs and recent bursts.
"use strict";

const QUEUES = ["active", "backoff", "unschedulable", "gated", "in_flight"];
const select = document.getElementById("namespace");
const params = new URLSearchParams(location.search);
let namespace = params.get("namespace") || "";

select.addEventListener("change", () => {
  namespace = select.value;
  const url = new URL(location.href);
  if (namespace) url.searchParams.set("namespace", namespace);
  else url.searchParams.delete("namespace");
  history.replaceState(null, "", url);
  refresh();
});

document.getElementById("lookup").addEventListener("submit", (event) => {
  event.preventDefault();
  const pod = document.getElementById("lookup-pod").value.trim();
  if (pod) location.href = `pod?pod=${encodeURIComponent(pod)}`;
});

function drawCounts(queue, nodes) {
  const cards = QUEUES.map((name) =>
    ks.el("div", { class: "card", id: `count-${name}` },
      ks.el("div", { class: "n" }, queue.counts[name] ?? 0),
      ks.el("div", { class: "l" }, name.replace("_", " "))));
  cards.push(ks.el("div", { class: "card", id: "count-binds" },
    ks.el("div", { class: "n" }, queue.bindsInFlight), ks.el("div", { class: "l" }, "binds in flight")));
  cards.push(ks.el("div", { class: "card", id: "count-nodes" },
    ks.el("div", { class: "n" }, nodes), ks.el("div", { class: "l" }, "nodes")));
  document.getElementById("counts").replaceChildren(...cards);
}

let shownNamespaces = "";

function drawNamespaces(counts) {
  const names = Object.keys(counts);
  if (namespace && !names.includes(namespace)) names.push(namespace);
  names.sort();
  // Rebuilt only when it changes: an open list would close under the user's pointer.
  const key = JSON.stringify([namespace, names.map((name) => [name, counts[name]])]);
  if (key === shownNamespaces) return;
  shownNamespaces = key;
  const options = [ks.el("option", { value: "" }, "all")].concat(names.map((name) =>
    ks.el("option", { value: name }, `${name} (${counts[name] ?? 0})`)));
  select.replaceChildren(...options);
  select.value = namespace;
}

function drawQueue(queue) {
  const rows = queue.pods.map((p) => ks.el("tr", { "data-pod": p.pod },
    ks.el("td", {}, ks.podLink(p.pod)),
    ks.el("td", {}, ks.badge(p.queue)),
    ks.el("td", { class: "num" }, p.attempts),
    ks.el("td", { class: "num" }, p.priority),
    ks.el("td", {}, p.gatedBy ? `gated by ${p.gatedBy}` : p.unschedulablePlugins.join(", ")),
    ks.el("td", {}, p.message)));
  ks.fill(document.querySelector("#queue tbody"), rows, 6, "no pod waiting");
  document.getElementById("queue-note").textContent = queue.matching > queue.pods.length
    ? `showing ${queue.pods.length} of ${queue.matching} pods` : "";
}

// A small chart of QOS (line) against SLO (dashed) over the sampled history.
function sparkline(history) {
  const width = 220, height = 40, pad = 3;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const points = history.filter((p) => p[1] !== null || p[2] !== null);
  if (points.length < 2) {
    const text = document.createElementNS(svg.namespaceURI, "text");
    text.setAttribute("x", 0);
    text.setAttribute("y", 24);
    text.setAttribute("fill", "#677086");
    text.setAttribute("font-size", "11");
    text.textContent = "gathering samples…";
    svg.append(text);
    return svg;
  }
  const t0 = points[0][0], t1 = points[points.length - 1][0];
  const title = document.createElementNS(svg.namespaceURI, "title");
  const last = points[points.length - 1];
  title.textContent = `QOS ${ks.fixed(points[0][1], 2)} \u2192 ${ks.fixed(last[1], 2)}, SLO `
    + `${ks.fixed(last[2], 2)}, over ${Math.round(t1 - t0)} s (${points.length} samples)`;
  svg.append(title);
  const values = points.flatMap((p) => [p[1], p[2]]).filter((v) => v !== null);
  const top = Math.max(1, ...values) * 1.1;
  const x = (t) => pad + (width - 2 * pad) * (t1 > t0 ? (t - t0) / (t1 - t0) : 1);
  const y = (v) => height - pad - (height - 2 * pad) * (v / top);
  for (const [index, cls] of [[2, "slo"], [1, "qos"]]) {
    const path = points.filter((p) => p[index] !== null)
      .map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[index]).toFixed(1)}`).join("");
    const line = document.createElementNS(svg.namespaceURI, "path");
    line.setAttribute("class", cls);
    line.setAttribute("d", path);
    svg.append(line);
  }
  return svg;
}

function drawQos(qos) {
  const section = document.getElementById("qos-section");
  if (!qos.enabled) {
    ks.fill(document.querySelector("#qos tbody"), [], 8, "QosAware is not enabled in any profile");
    return;
  }
  section.hidden = false;
  const rows = qos.controllers.map((c) => ks.el("tr", { "data-controller": c.controller },
    ks.el("td", {}, c.controller),
    ks.el("td", { class: "num" }, ks.fixed(c.qos, 2)),
    ks.el("td", { class: "num" }, ks.fixed(c.slo, 2)),
    ks.el("td", {}, c.ttv),
    ks.el("td", { class: "num" }, c.runningPods),
    ks.el("td", { class: "num" }, c.waitingPods),
    ks.el("td", { class: "num" }, c.bindingPods),
    ks.el("td", {}, sparkline(c.history))));
  ks.fill(document.querySelector("#qos tbody"), rows, 8, "no controller with pods of ours");
  document.getElementById("qos-note").textContent = qos.matching > qos.controllers.length
    ? `showing ${qos.controllers.length} of ${qos.matching} controllers` : "";
}

function drawGangs(gangs) {
  const rows = gangs.gangs.map((g) => ks.el("tr", { "data-gang": g.group },
    ks.el("td", {}, g.group),
    ks.el("td", { class: "num" }, `${g.minAvailable ?? "all"} (${g.minimumFrom})`),
    ks.el("td", { class: "num" }, g.members),
    ks.el("td", { class: "num" }, g.pending),
    ks.el("td", { class: "num" }, g.bound),
    ks.el("td", {}, g.waitingSeconds !== undefined
      ? `${g.waitingSeconds}s of ${g.timeoutSeconds}s` : `not waiting (timeout ${g.timeoutSeconds}s)`),
    ks.el("td", {}, g.podGroupPhase || "–"),
    ks.el("td", {}, g.memberStates.map((m) =>
      ks.el("div", {}, ks.podLink(m.pod), " ", ks.badge(m.state), m.node ? ` on ${m.node}` : "")))));
  ks.fill(document.querySelector("#gangs tbody"), rows, 8, "no gang");
  document.getElementById("gangs-note").textContent = gangs.count > gangs.gangs.length
    ? `showing ${gangs.gangs.length} of ${gangs.count} gangs` : "";
}

function drawBursts(bursts) {
  const rows = bursts.recent.map((b) => ks.el("tr", {},
    ks.el("td", {}, ks.clock(b.at)),
    ks.el("td", {}, b.profile),
    ks.el("td", { class: "num" }, b.pods),
    ks.el("td", { class: "num" }, ks.seconds(b.kernelSeconds)),
    ks.el("td", { class: "num" }, b.binds),
    ks.el("td", { class: "num" }, b.failures)));
  ks.fill(document.querySelector("#bursts tbody"), rows, 6, "no burst yet");
  document.getElementById("bursts-note").textContent =
    `${bursts.total} bursts since start, ${ks.seconds(bursts.kernelSeconds)} in the kernel`;
}

async function refresh() {
  const query = namespace ? `?namespace=${encodeURIComponent(namespace)}` : "";
  const data = await ks.json(`api/overview${query}`);
  drawCounts(data.queue, data.nodes);
  drawNamespaces(data.queue.namespaces);
  drawQueue(data.queue);
  drawQos(data.qos);
  drawGangs(data.gangs);
  drawBursts(data.bursts);
  document.body.dataset.updated = String(data.at);
}

ks.poll(refresh, 2000);
