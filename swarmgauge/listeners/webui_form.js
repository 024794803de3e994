// swarmgauge in Locust's web UI: the start form says what will run, and the swarmgauge tab links to its views.
// Loaded by the index page (listeners/webui.py). It only adds to what Locust's React app drew: labels, group
// headings, help lines, the plan box above START, the EDIT dialog's notice that a plan drives the users; it never
// removes a field, so the form submits as Locust's.
"use strict";
(function () {
  const base = "./swarmgauge/";
  const state = {fields: [], preview: null, closedRun: null, timer: null, scheduled: false,
    edit: null, editKnown: false, editAsked: 0};
  const EDIT_HEADING = "Edit running load test";
  const EDIT_POLL_MS = 2000;
  const css = `
    [data-sg-group] { position: relative; margin-top: 2.2em !important; }
    [data-sg-group]::before { content: attr(data-sg-group); position: absolute; top: -1.9em; left: 0;
      font-weight: 600; font-size: 0.95rem; border-bottom: 1px solid #8884; width: 100%; }
    .sg-help { font-size: 0.78rem; opacity: 0.75; margin: 3px 2px 0 2px; }
    .MuiFormControlLabel-root[data-sg-field] { flex-wrap: wrap; }
    .MuiFormControlLabel-root .sg-help { flex-basis: 100%; margin-left: 42px; margin-top: -6px; }
    .sg-flag { font-family: monospace; opacity: 0.7; margin-left: 0.6em; }
    .sg-greyed { opacity: 0.45; }
    .sg-reason { font-size: 0.8rem; color: #b26a00; margin: 4px 2px 0 2px; }
    #sg-plan { border: 1px solid #1976d2; border-radius: 4px; padding: 8px 12px; font-size: 0.88rem; }
    #sg-plan h4 { margin: 0 0 4px 0; font-size: 0.95rem; } #sg-plan ul { margin: 2px 0 4px 1.2em; padding: 0; }
    #sg-plan .sg-error { color: #c62828; }
    #sg-edit-notice { border: 1px solid #ed6c02; border-left-width: 5px; border-radius: 4px; padding: 8px 12px;
      margin: 8px 0 4px 0; font-size: 0.9rem; background: #ed6c0214; }
    button[data-sg-held] { filter: grayscale(1); opacity: 0.5; cursor: not-allowed; }
    #sg-tab-links { margin: 6px 0 10px 0; font-size: 0.9rem; } #sg-tab-links a { margin-right: 1.2em; }`;

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => node.setAttribute(k, v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fieldBox(input) {
    return input.closest(".MuiFormControl-root") || input.closest(".MuiFormControlLabel-root");
  }

  function labelField(doc, firstOfGroup) {
    const input = document.querySelector(`form [name="${CSS.escape(doc.name)}"]`);
    const box = input && fieldBox(input);
    if (!box || box.dataset.sgDone) return;
    box.dataset.sgDone = "1";
    box.dataset.sgField = doc.name;
    if (firstOfGroup) box.dataset.sgGroup = doc.group;
    const checkLabel = box.querySelector(".MuiFormControlLabel-label");
    const label = checkLabel || box.querySelector("label");
    if (label) {
      label.textContent = doc.label;
      label.appendChild(el("span", {class: "sg-flag"}, doc.flag));
    }
    const legend = box.querySelector("legend span");
    if (legend) legend.textContent = doc.label + "   " + doc.flag;
    if (doc.help) box.appendChild(el("p", {class: "sg-help"}, doc.help));
  }

  function labelFields() {
    let group = null;
    for (const doc of state.fields) {
      labelField(doc, doc.group !== group);
      group = doc.group;
    }
    const shapePicker = document.querySelector('form [name="shapeClass"]');
    const shapeBox = shapePicker && fieldBox(shapePicker);
    if (shapeBox) shapeBox.style.display = "none"; // swarmgauge's plan decides the shape: Default would drop it
  }

  function planBox(form) {
    let box = document.getElementById("sg-plan");
    const start = form.querySelector('button[type="submit"]');
    // the START form only: what EDIT says of a running plan is the EDIT dialog's own business
    if (!start || !/start/i.test(start.textContent)) return null;
    if (!box) {
      box = el("div", {id: "sg-plan"});
      start.parentNode.insertBefore(box, start);
    }
    return box;
  }

  // The classes ticked in Locust's User classes table (outside the form); all of them when there is no table.
  function pickedClasses(names) {
    const rows = [...document.querySelectorAll("tr")];
    return names.filter((name) => {
      const row = rows.find((tr) => [...tr.querySelectorAll("td")].some((td) => td.textContent.trim() === name));
      const box = row && row.querySelector('input[type="checkbox"]');
      return !box || box.checked;
    });
  }

  function renderPlan(form) {
    const box = planBox(form);
    const preview = state.preview;
    if (!box || !preview) return;  // not the START form, or nothing known yet
    box.replaceChildren();
    const plan = preview.plan;
    if (preview.error) {
      box.appendChild(el("h4", {}, "What START will run"));
      box.appendChild(el("div", {class: "sg-error"}, preview.error));
    } else if (!plan || !plan.sets_users) {
      const what = plan ? plan.stages.join(", ") : "the users and ramp above, until STOP";
      box.appendChild(el("h4", {}, `No plan: START runs ${what}, as set above`));
      box.appendChild(el("div", {class: "sg-classes"}, `User classes: ${pickedClasses(preview.classes).join(", ")}`));
    } else {
      const kind = plan.kind === plan.name ? "" : ` (${plan.kind})`;
      box.appendChild(el("h4", {}, `Plan in effect: ${plan.name}${kind}, ${plan.duration}`));
      const stages = el("ul", {class: "sg-stages"});
      plan.stages.forEach((s) => stages.appendChild(el("li", {}, s)));
      box.appendChild(stages);
      const classes = plan.classes_from_stages ? plan.classes : pickedClasses(plan.classes);
      const named = plan.classes_from_stages ? " (named by the plan's stages)" : "";
      box.appendChild(el("div", {class: "sg-classes"}, `User classes: ${classes.join(", ")}${named}`));
      if (plan.slos.length) box.appendChild(el("div", {}, `Plan's SLOs: ${plan.slos.join(", ")}`));
    }
    greyCommonFields(form, plan && plan.sets_users ? plan.common_fields_reason : null);
  }

  function greyCommonFields(form, reason) {
    for (const name of ["userCount", "spawnRate"]) {
      const input = form.querySelector(`[name="${name}"]`);
      const box = input && fieldBox(input);
      if (!box) continue;
      box.classList.toggle("sg-greyed", !!reason);
      input.readOnly = !!reason;
      input.title = reason ? `Not used: ${reason}` : "";
      let note = box.querySelector(".sg-reason");
      if (reason && !note) box.appendChild((note = el("p", {class: "sg-reason"})));
      if (note) note.textContent = reason ? `Not used: ${reason}` : "";
    }
  }

  async function refreshPreview(form) {
    try {
      const answer = await fetch(base + "api/plan", {method: "POST", body: new FormData(form), cache: "no-store"});
      if (answer.ok) state.preview = await answer.json();
    } catch (e) { /* the next change tries again */ }
    renderPlan(form);
  }

  function tabLinks() {
    const onTab = new URLSearchParams(location.search).get("tab") === "swarmgauge";
    const existing = document.getElementById("sg-tab-links");
    if (!onTab) { if (existing) existing.remove(); return; }
    const table = document.querySelector(".MuiTableContainer-root");
    if (!table) return;
    const links = existing || el("div", {id: "sg-tab-links"});
    if (links.nextElementSibling !== table) table.parentNode.insertBefore(links, table);
    const wanted = state.closedRun || "";
    if (links.dataset.run === wanted && links.childElementCount) return;
    links.dataset.run = wanted;
    links.replaceChildren(el("a", {href: base, id: "sg-full-view"}, "Full live view: steps, SLO verdicts, memory"));
    if (state.closedRun) {
      const href = `${base}runs/${encodeURIComponent(state.closedRun)}/report.html`;
      links.appendChild(el("a", {href, id: "sg-report-link"}, `Report of run ${state.closedRun}`));
    }
  }

  // Locust's EDIT dialog: its heading, then the form (the START form's component, with isEditSwarm).
  function editForm() {
    const heading = [...document.querySelectorAll("h2")].find((h) => h.textContent.trim() === EDIT_HEADING);
    return heading ? heading.parentNode.querySelector("form") : null;
  }

  // The server's text (/stats/requests' swarmgauge_edit: the same words as its refusal of an EDIT) above the dialog's
  // fields while a plan drives the users, and UPDATE off until the fields that make the plan are emptied (it would
  // be refused, and Locust's dialog closes on it); nothing otherwise. The dialog re-renders: this runs again then.
  function renderEditNotice() {
    const form = editForm();
    if (!form) return;
    const said = state.edit ? state.edit.notice : null;
    let notice = document.getElementById("sg-edit-notice");
    if (notice && notice.nextElementSibling !== form) { notice.remove(); notice = null; } // a notice of ours only
    if (said && !notice) {
      notice = el("div", {id: "sg-edit-notice", role: "note"});
      form.parentNode.insertBefore(notice, form);
    }
    if (notice && !said) { notice.remove(); notice = null; }
    if (notice && notice.textContent !== said) notice.textContent = said;
    holdUpdate(form);
    if (state.editKnown) form.dataset.sgEditChecked = "1"; // for a watcher: the server was asked, and answered
  }

  function holdUpdate(form) {
    const update = form.querySelector('button[type="submit"]');
    if (!update) return;
    const planned = state.edit && (state.edit.take_over_fields.length === 0 || state.edit.take_over_fields.some(
      (name) => { const input = form.querySelector(`[name="${name}"]`); return !input || input.value.trim(); }));
    if (planned && !update.disabled) {
      update.disabled = true;
      update.dataset.sgHeld = "1";
      update.title = "The plan drives the users: see above";
    } else if (!planned && update.dataset.sgHeld) {
      update.disabled = false; // only a hold of ours is lifted: Locust's own stays
      delete update.dataset.sgHeld;
      update.title = "";
    }
  }

  async function pollEditNotice(force) {
    const form = editForm();
    if (!form) return;
    if (!force && Date.now() - state.editAsked < EDIT_POLL_MS) return;
    const asked = Date.now();
    state.editAsked = asked;
    try {
      const answer = await fetch("./stats/requests", {cache: "no-store"});
      const doc = answer.ok ? await answer.json() : null;
      if (doc && state.editAsked === asked) {
        state.edit = doc.swarmgauge_edit || null;
        state.editKnown = true;
        renderEditNotice();
      }
    } catch (e) { /* the next poll tries again */ }
  }

  function decorate() {
    state.scheduled = false;
    const form = document.querySelector("form");
    if (form && state.fields.length) {
      labelFields();
      if (!document.getElementById("sg-plan") && state.preview) renderPlan(form);
    }
    tabLinks();
    const editing = editForm();
    if (!editing) Object.assign(state, {edit: null, editKnown: false, editAsked: 0}); // closed: ask anew
    else if (!state.editAsked) pollEditNotice(true); // the dialog just opened
    else renderEditNotice();
  }

  function schedule() {
    if (!state.scheduled) { state.scheduled = true; requestAnimationFrame(decorate); }
  }

  async function pollClosedRun() {
    if (new URLSearchParams(location.search).get("tab") !== "swarmgauge") return;
    try {
      const answer = await fetch(base + "api/live", {cache: "no-store"});
      if (answer.ok) { state.closedRun = (await answer.json()).closed_run; schedule(); }
    } catch (e) { /* the next poll tries again */ }
  }

  async function init() {
    document.head.appendChild(el("style", {id: "sg-style"}, css));
    if (window.swarmgaugeForm) {
      Object.assign(state, window.swarmgaugeForm); // inline in the page: the form is labelled as it first renders
    } else {
      try {
        const answer = await fetch(base + "api/form", {cache: "no-store"});
        if (answer.ok) Object.assign(state, await answer.json());
      } catch (e) { /* the form stays as Locust drew it */ }
    }
    new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true});
    document.addEventListener("input", (event) => {
      const form = event.target.closest && event.target.closest("form");
      if (!form) return;
      if (form === editForm()) holdUpdate(form); // Steps, Plan or Rate emptied: UPDATE takes the plan over
      clearTimeout(state.timer);
      state.timer = setTimeout(() => refreshPreview(form), 400);
    });
    document.addEventListener("change", (event) => {
      const form = event.target.closest && event.target.closest("form");
      if (form) { clearTimeout(state.timer); state.timer = setTimeout(() => refreshPreview(form), 400); return; }
      const startForm = document.querySelector("form"); // a tick in the User classes table, outside the form
      if (startForm && event.target.type === "checkbox") setTimeout(() => renderPlan(startForm), 50);
    });
    setInterval(pollClosedRun, 2000);
    setInterval(pollEditNotice, EDIT_POLL_MS);
    pollClosedRun();
    schedule();
  }

  init();
})();
