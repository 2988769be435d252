// A pod's page: polls api/pod and draws where it went or why not, node by node.
"use strict";

const pod = new URLSearchParams(location.search).get("pod") || "";
document.getElementById("pod-name").textContent = pod;
document.title = `kubesalvo: ${pod}`;
let sortKey = null; // a column: "node", "verdict", "total" or a plugin's name
let ascending = false;
let table = null;

function term(name, ...value) {
  return [ks.el("dt", {}, name), ks.el("dd", {}, ...value)];
}

function drawSummary(answer) {
  const parts = [];
  if (answer.status === "placed") {
    parts.push(ks.el("p", { class: "big", id: "verdict" }, "placed on ",
      ks.el("b", { id: "winner" }, answer.node)));
  } else if (answer.status === "pending") {
    parts.push(ks.el("p", { class: "big pending", id: "verdict" }, ks.el("b", {}, "pending"),
      answer.queue ? ` in the ${answer.queue} queue` : ""));
  } else {
    parts.push(ks.el("p", { class: "big pending", id: "verdict" }, answer.status || "unknown",
      ": ", answer.message || answer.error || ""));
  }
  const facts = [];
  const last = answer.lastAttempt;
  if (last) {
    facts.push(...term("last attempt", `${ks.clock(last.at)}, profile ${last.profile}, `
      + `in a burst of ${last.burstSize}${last.node ? `, score ${last.score}` : ""}`));
  }
  if (answer.qos) {
    const q = answer.qos;
    facts.push(...term("QosAware", `${q.controller}: QOS ${ks.fixed(q.qos, 2)} against SLO `
      + `${ks.fixed(q.slo, 2)}, TTV ${q.ttv}, ${q.waitingPods} pod(s) waiting`));
  }
  if (answer.gang) {
    const g = answer.gang;
    facts.push(...term("gang", `${g.group}: minAvailable ${g.minAvailable ?? "all in a burst"} `
      + `(from ${g.minimumFrom}), ${g.members} members, ${g.pending} pending, ${g.bound} bound`
      + (g.waitingSeconds !== undefined ? `, waiting ${g.waitingSeconds}s of ${g.timeoutSeconds}s` : "")
      + (g.podGroupPhase ? `, PodGroup ${g.podGroupPhase}` : "")));
  }
  if (answer.scoresFrom) facts.push(...term("scores from", answer.scoresFrom));
  if (facts.length) parts.push(ks.el("dl", { class: "facts" }, facts));
  document.getElementById("summary").replaceChildren(...parts);
}

function drawFailure(answer) {
  const section = document.getElementById("failed-section");
  section.hidden = answer.status !== "pending" || !answer.message;
  if (section.hidden) return;
  document.getElementById("failed").textContent = answer.message;
  const reasons = Object.entries(answer.reasons || {}).sort((a, b) => b[1] - a[1]);
  ks.fill(document.querySelector("#reasons tbody"), reasons.map(([reason, count]) =>
    ks.el("tr", {}, ks.el("td", { class: "num" }, count), ks.el("td", {}, reason))), 2,
    "no per-node reasons (rejected before the filters)");
}

function drawPreemption(decision) {
  const section = document.getElementById("preemption-section");
  section.hidden = !decision;
  if (!decision) return;
  const facts = [
    ...term("node chosen", decision.node || "none: no node can be freed for it"),
    ...term("victims", decision.victims.length
      ? ks.el("span", {}, ...decision.victims.map((v, i) => [i ? ", " : "", ks.podLink(v)]))
      : "none"),
    ...term("nodes tried", decision.nodesTried),
    ...term("PodDisruptionBudgets violated", decision.pdbViolations),
  ];
  if (decision.message) facts.push(...term("message", decision.message));
  document.getElementById("preemption").replaceChildren(ks.el("dl", { class: "facts" }, facts));
}

function value(row, key) {
  if (key === "node") return row.node;
  if (key === "verdict") return row.feasible ? 1 : 0;
  if (key === "total") return row.feasible ? row.total : -Infinity;
  return row.feasible ? (row.plugins[key] ?? 0) : -Infinity;
}

function drawNodes() {
  if (!table) return;
  const columns = ["node", "verdict", "total", ...table.plugins];
  const head = ks.el("tr", {}, columns.map((key) => {
    // A zero-width space between words of a plugin's name lets a narrow column wrap it.
    const label = key.replace(/([a-z])([A-Z])/g, "$1\u200b$2");
    const th = ks.el("th", { "data-key": key, class: key === "node" || key === "verdict" ? "" : "num" },
      label);
    if (key === sortKey) th.classList.add("sorted", ...(ascending ? ["asc"] : []));
    th.addEventListener("click", () => {
      ascending = key === sortKey ? !ascending : key === "node";
      sortKey = key;
      drawNodes();
    });
    return th;
  }));
  document.querySelector("#nodes thead").replaceChildren(head);
  const rows = [...table.rows];
  if (sortKey) {
    rows.sort((a, b) => {
      const x = value(a, sortKey), y = value(b, sortKey);
      const order = x < y ? -1 : x > y ? 1 : a.node.localeCompare(b.node);
      return ascending ? order : -order;
    });
  }
  const body = rows.map((row) => {
    const tr = ks.el("tr", {
      class: row.chosen ? "chosen" : row.feasible ? "" : "infeasible", "data-node": row.node,
    });
    tr.append(ks.el("td", { class: "node" }, row.node, " ", row.chosen ? ks.badge("chosen") : ""));
    if (row.feasible) {
      tr.append(ks.el("td", {}, ks.badge("feasible")));
      tr.append(ks.el("td", { class: "num" }, row.total));
      for (const plugin of table.plugins) tr.append(ks.el("td", { class: "num" }, row.plugins[plugin] ?? 0));
    } else {
      tr.append(ks.el("td", {}, ks.badge("infeasible")));
      tr.append(ks.el("td", { colspan: table.plugins.length + 1 },
        row.reasons.join("; "),
        row.lacks.length ? ks.el("span", { class: "lacks" }, ` \u2014 lacks ${row.lacks.join(", ")}`) : "",
        row.unresolvable ? " (preemption cannot help)" : ""));
    }
    return tr;
  });
  ks.fill(document.querySelector("#nodes tbody"), body, columns.length, "no node");
}

function drawNodeTable(nodeTable, status) {
  table = nodeTable || null;
  const note = document.getElementById("nodes-note");
  if (!table) {
    note.textContent = "";
    document.querySelector("#nodes tbody").replaceChildren();
    return;
  }
  if (table.error) {
    note.textContent = table.error;
    return;
  }
  const feasibleShown = table.rows.filter((r) => r.feasible).length;
  const closest = table.rows.length - feasibleShown;
  const passing = table.feasible
    ? `${table.feasible} of ${table.nodes} nodes pass the filters now (the best ${feasibleShown}`
      + " shown, with each score plugin's weighted score)"
    : `None of the ${table.nodes} nodes passes the filters now`;
  const failing = closest
    ? `; ${closest} of the ${table.infeasible} that do not, closest first, with what each lacks`
    : "";
  note.textContent = `${passing}${failing}. Worked out now by the plain reference for this`
    + " pod alone; click a column to sort.";
  drawNodes();
}

async function refresh() {
  if (!pod) throw new Error("no pod given: add ?pod=namespace/name");
  const answer = await ks.json(`api/pod?pod=${encodeURIComponent(pod)}`);
  drawSummary(answer);
  drawFailure(answer);
  drawPreemption(answer.preemption);
  drawNodeTable(answer.nodeTable, answer.status);
  document.body.dataset.status = answer.status || "";
}

ks.poll(refresh, 3000);
