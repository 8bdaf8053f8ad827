// The dashboard's shell: the login form, the navigation and a hash router (#/queues, #/jobs, #/job/ID,
// ...). Each view gets an AbortController that is aborted when the user leaves it, which ends its
// streams and timers.
import { api, ApiError, token } from "./api.js";
import { h, status } from "./dom.js";
import { clustersView } from "./views/clusters.js";
import { jobView } from "./views/job.js";
import { jobsView } from "./views/jobs.js";
import { queuesView } from "./views/queues.js";
import { simulatorView } from "./views/sim.js";
import { usageView } from "./views/usage.js";

const ROUTES = {
  queues: queuesView,
  clusters: clustersView,
  jobs: jobsView,
  job: jobView,
  usage: usageView,
  simulator: simulatorView,
};

let current = null;
let me = null;

function route() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  return { name: ROUTES[name] ? name : "queues", arg: rest.map(decodeURIComponent).join("/") };
}

async function render() {
  if (!me) return;
  current?.abort();
  current = new AbortController();
  const { name, arg } = route();
  for (const link of document.querySelectorAll("#nav a")) {
    const here = link.getAttribute("href") === `#/${name === "job" ? "jobs" : name}`;
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const view = document.getElementById("view");
  const body = h("section", { class: "view", dataset: { view: name } });
  view.replaceChildren(body);
  status("");
  try {
    await ROUTES[name]({ root: body, me, arg, signal: current.signal });
  } catch (error) {
    if (current.signal.aborted) return;
    body.append(h("p", { class: "error", role: "alert" }, `Could not load: ${error.message}`));
    if (error instanceof ApiError && error.status === 401) logout();
  }
}

function showLogin(message = "") {
  me = null;
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message;
  for (const id of ["nav", "who", "logout"]) document.getElementById(id).hidden = true;
  document.getElementById("view").replaceChildren();
  document.getElementById("token").focus();
}

function logout() {
  current?.abort();
  token.clear();
  showLogin();
}

async function start() {
  if (!token.get()) return showLogin();
  try {
    me = await api("/v1/whoami");
  } catch (error) {
    token.clear();
    return showLogin(error instanceof ApiError ? error.message : `The server did not answer: ${error.message}`);
  }
  if (me.role !== "admin" && me.role !== "tenant") {
    token.clear();
    return showLogin(`A ${me.role} token cannot use the dashboard: use an admin or a tenant token.`);
  }
  document.getElementById("login").hidden = true;
  const who = document.getElementById("who");
  who.textContent = `${me.role} ${me.name}`;
  for (const id of ["nav", "who", "logout"]) document.getElementById(id).hidden = false;
  document.body.dataset.role = me.role;
  await render();
}

document.getElementById("login").addEventListener("submit", (event) => {
  event.preventDefault();
  const field = document.getElementById("token");
  token.set(field.value.trim());
  field.value = "";
  start();
});
document.getElementById("logout").addEventListener("click", logout);
window.addEventListener("hashchange", render);
start();
