/// The page's stylesheet and script, served from memory (`/static/page.css`, `/static/page.js`):
/// the box works with no Internet, so nothing comes from elsewhere, and the Content-Security-Policy
/// allows only these.
enum StaticAssets {
    static let stylesheet = """
    :root { color-scheme: light dark; --red: #c62828; --amber: #ef8f00; --green: #2e7d32; --blue: #1565c0; }
    body { font: 16px/1.45 system-ui, sans-serif; margin: 0; }
    header { padding: .6rem 1rem; border-bottom: 1px solid #8886; display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; align-items: baseline; }
    header h1 { font-size: 1.25rem; margin: 0; }
    .node { font-family: ui-monospace, monospace; font-weight: normal; font-size: .9rem; }
    main { padding: .5rem 1rem 3rem; max-width: 72rem; }
    main.narrow { max-width: 26rem; margin: 2rem auto; }
    section { margin: 1rem 0; }
    h2 { font-size: 1.1rem; border-bottom: 1px solid #8884; padding-bottom: .2rem; }
    .lines { list-style: none; padding: 0; display: grid; gap: .4rem; }
    .lamp { display: inline-block; width: .9rem; height: .9rem; border-radius: 50%; background: #8884; margin-right: .5rem; vertical-align: -.1rem; }
    .line.on.red .lamp { background: var(--red); } .line.on.amber .lamp { background: var(--amber); }
    .line.on.green .lamp { background: var(--green); } .line.on.blue .lamp { background: var(--blue); }
    .line.on.buzzer .lamp { background: #000; outline: 2px solid var(--red); }
    .why { margin: .1rem 0 0 1.4rem; padding: 0; list-style: none; font-size: .92rem; }
    .alerts { list-style: none; padding: 0; }
    .alert { border-left: .35rem solid #8888; padding: .4rem .7rem; margin: .4rem 0; background: #8881; }
    .alert.critical { border-color: var(--red); } .alert.warning { border-color: var(--amber); }
    .warnings { list-style: none; padding: 0; }
    .warning { border-left: .35rem solid #8888; padding: .4rem .7rem; margin: .4rem 0; background: #8881; overflow-wrap: anywhere; }
    .warning.sounds { border-color: var(--red); } .warning.shown { border-color: var(--amber); }
    .warning.listed .badge { background: #888; } .warning.shown .badge { background: var(--amber); color: #000; }
    .ok { color: var(--green); font-weight: 600; } .waiting, .warn { color: var(--red); font-weight: 600; }
    .quiet { color: #888; } .id { color: #888; font-family: ui-monospace, monospace; }
    .past { background: var(--amber); color: #000; padding: .3rem .6rem; }
    .notice { background: #2e7d3222; padding: .4rem .7rem; }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #8883; vertical-align: top; }
    tr.step-alarm td, tr.step-notify td { background: #c6282822; } tr.step-prompt td, tr.step-text td { background: #ef8f0022; }
    form.inline { display: inline; }
    .chats { list-style: none; padding: 0; } .chats > li { border-left: .35rem solid #8888; padding: .4rem .7rem; margin: .4rem 0; background: #8881; }
    .badge { display: inline-block; min-width: 1.4rem; padding: 0 .4rem; border-radius: .8rem; background: var(--red); color: #fff; text-align: center; font-weight: 600; }
    .chats li.in { overflow-wrap: anywhere; } .chats li.out { color: #888; }
    button { font: inherit; padding: .45rem .9rem; border-radius: .4rem; border: 1px solid #8888; background: var(--blue); color: #fff; cursor: pointer; min-height: 2.6rem; }
    button.secondary { background: transparent; color: inherit; }
    label { display: block; margin: .3rem 0; } input, select { font: inherit; padding: .3rem; max-width: 100%; }
    form.raise, form.enrol { border: 1px solid #8884; padding: .5rem .8rem; margin: .8rem 0; }
    dl { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; } dt { font-weight: 600; } dd { margin: 0; }
    @media (max-width: 40rem) { th:nth-child(3), td:nth-child(3) { display: none; } dl { grid-template-columns: 1fr; } }
    """

    /// Live updates by Server-Sent Events: each message carries the sections rendered on the box;
    /// the browser swaps them in and resumes after a drop with Last-Event-ID (EventSource does).
    static let script = """
    "use strict";
    (function () {
      const csrf = (document.querySelector('meta[name="csrf"]') || {}).content || "";
      function localTimes(root) {
        root.querySelectorAll("time[datetime]").forEach(function (t) {
          const d = new Date(t.getAttribute("datetime"));
          if (!isNaN(d)) t.textContent = d.toLocaleString();
        });
      }
      // A section under the pointer, or holding the focus, is not replaced at once: a button must
      // not move or vanish under a finger about to press it. It is brought up to date once the
      // pointer leaves, and after two seconds whatever the pointer does (a mouse left resting on
      // the calls for help must not hide a new one).
      const pending = {};
      const since = {};
      const shown = {};
      function busy(el) {
        return el.matches(":hover") || el.contains(document.activeElement) && document.activeElement !== document.body;
      }
      // What staff are typing (a chat reply) survives a section's update: values of the text
      // fields, keyed by their form's action, its device and the field's name, and the focus.
      function fieldKey(i) {
        const f = i.closest("form");
        const d = f && f.querySelector("input[name=device]");
        return (f ? f.getAttribute("action") : "") + "|" + (d ? d.value : "") + "|" + i.name;
      }
      function drafts(root) {
        const saved = {};
        root.querySelectorAll("input:not([type=hidden]), textarea").forEach(function (i) {
          if (i.value || i === document.activeElement) saved[fieldKey(i)] = { value: i.value, focused: i === document.activeElement };
        });
        return saved;
      }
      function restore(root, saved) {
        root.querySelectorAll("input:not([type=hidden]), textarea").forEach(function (i) {
          const s = saved[fieldKey(i)];
          if (!s) return;
          i.value = s.value;
          if (s.focused) i.focus();
        });
      }
      function swap(id) {
        const html = pending[id];
        const old = document.getElementById(id);
        if (html === undefined || !old) return;
        if (busy(old) && Date.now() - since[id] < 2000) {
          setTimeout(function () { swap(id); }, 2000 - (Date.now() - since[id]));
          return;
        }
        delete pending[id];
        delete since[id];
        if (shown[id] === html) return;
        const box = document.createElement("div");
        box.innerHTML = html;
        const fresh = box.firstElementChild;
        if (!fresh) return;
        fresh.querySelectorAll("input.csrf").forEach(function (i) { i.value = csrf; });
        fresh.addEventListener("mouseleave", function () { swap(id); });
        const saved = drafts(old);
        old.replaceWith(fresh);
        restore(fresh, saved);
        // When the page last changed (ms since the epoch): what the browser tests time.
        fresh.dataset.shownAt = String(Date.now());
        shown[id] = html;
        localTimes(fresh);
      }
      function apply(message) {
        const data = JSON.parse(message.data);
        Object.keys(data.sections).forEach(function (id) {
          if (pending[id] === undefined) since[id] = Date.now();
          pending[id] = data.sections[id];
          swap(id);
        });
        const live = document.getElementById("live");
        if (live) {
          live.dataset.sequence = data.sequence;
          live.innerHTML = "Live: event " + data.sequence + ", " + data.time;
          localTimes(live);
        }
        document.body.dataset.sequence = data.sequence;
      }
      document.querySelectorAll("main > section[id]").forEach(function (s) {
        s.addEventListener("mouseleave", function () { swap(s.id); });
      });
      localTimes(document);
      if (!window.EventSource || !document.getElementById("live")) return;
      const source = new EventSource("/events");
      source.addEventListener("state", apply);
      source.addEventListener("error", function () {
        const live = document.getElementById("live");
        if (live) live.textContent = "Reconnecting to the box…";
      });
    })();
    """
}
