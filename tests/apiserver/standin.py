"""A kube-apiserver stand-in that behaves as kube-aggregator does toward an aggregated API server,
for tests that cannot run a real cluster. Read from kube-aggregator's and k8s.io/apiserver's code
(handler_proxy.go, handler_discovery.go, the remote availability controller, the OpenAPI v2/v3
aggregators, the delegating authenticator and authoriser), written here in Python:

- clients (kubectl) authenticate with bearer tokens from TOKENS; every request is authorised
  against the small RBAC table RULES before anything else, as kube-apiserver's filter chain does;
- a request under a registered APIService's /apis/GROUP/VERSION is proxied to the service over
  TLS with the front-proxy client certificate and X-Remote-User / X-Remote-Group /
  X-Remote-Extra-* headers (extra keys escaped as client-go's SetAuthProxyHeaders does);
- check_availability() is the availability controller: GET /apis/GROUP/VERSION on the service as
  system:kube-aggregator in system:masters; any non-2xx is FailedDiscoveryCheck;
- /apis answers aggregated discovery (apidiscovery.k8s.io/v2) when asked, merging the service's
  own aggregated document, fetched as kube-aggregator fetches it; /openapi/v3 lists the service's
  index entries verbatim and proxies /openapi/v3/apis/GROUP/VERSION; /openapi/v2 merges the
  service's paths and definitions;
- it answers TokenReview and SubjectAccessReview from TOKENS and RULES, serves the
  kube-system/extension-apiserver-authentication ConfigMap, and the objects of an objects file
  (ModelDeployments, Pods by equality label selector, ReplicaSets, Deployments) by get, paged
  list and watch (chunked JSON lines, bookmarks, ERROR 410 for a resourceVersion older than the
  kept history, as after an etcd compaction), counting every object request so a test can tell
  whether a snapshot made one.
"""

import http.client
import json
import re
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
CONFIGMAP_PATH = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"

# token -> (user, groups)
TOKENS = {
    "admin-token": ("kubernetes-admin", ["system:masters"]),
    "viewer-token": ("jane", ["viewers"]),
    "norole-token": ("bob", []),
    "reader-sa-token": ("system:serviceaccount:team:reader", ["system:serviceaccounts"]),
    "nobody-sa-token": ("system:serviceaccount:team:nobody", ["system:serviceaccounts"]),
    "serve-sa-token": ("system:serviceaccount:modelmetrics-system:modelmetrics",
                       ["system:serviceaccounts"]),
    "hpa-token": ("system:serviceaccount:kube-system:horizontal-pod-autoscaler",
                  ["system:serviceaccounts"]),
}
# (subjects, verbs, api groups, resources, non-resource URLs); "*" matches anything.
RULES = [
    ({"group:system:masters"}, {"*"}, {"*"}, {"*"}, {"*"}),
    ({"group:system:authenticated"}, {"get"}, set(), set(), {"/api", "/api/*", "/apis", "/apis/*",
                                                            "/openapi/*", "/version"}),
    ({"group:viewers", "user:system:serviceaccount:team:reader"}, {"get"},
     {"worker.gpustack.ai", "metrics.modelmetrics.io"},
     {"modeldeployments/metrics", "modeldeploymentmetrics"}, set()),
    ({"user:system:serviceaccount:modelmetrics-system:modelmetrics"}, {"get", "list", "watch"},
     {"", "apps", "worker.gpustack.ai"},
     {"pods", "replicasets", "deployments", "modeldeployments", "configmaps"}, set()),
    # system:controller:horizontal-pod-autoscaler's rule on the custom metrics API.
    ({"user:system:serviceaccount:kube-system:horizontal-pod-autoscaler"},
     {"get", "list", "watch"}, {"custom.metrics.k8s.io"}, {"*"}, set()),
    ({"user:system:serviceaccount:modelmetrics-system:modelmetrics"}, {"create"},
     {"authentication.k8s.io", "authorization.k8s.io"},
     {"tokenreviews", "subjectaccessreviews"}, set()),
]
# The stand-in's own resources, by group version: (resource, kind, namespaced, verbs).
OWN_RESOURCES = {
    ("", "v1"): [("pods", "Pod", True, ["get", "list", "watch"]),
                 ("configmaps", "ConfigMap", True, ["get", "list", "watch"])],
    ("apps", "v1"): [("deployments", "Deployment", True, ["get", "list", "watch"]),
                     ("replicasets", "ReplicaSet", True, ["get", "list", "watch"])],
    ("authentication.k8s.io", "v1"): [("tokenreviews", "TokenReview", False, ["create"])],
    ("authorization.k8s.io", "v1"): [("subjectaccessreviews", "SubjectAccessReview", False,
                                      ["create"])],
    ("worker.gpustack.ai", "v1alpha1"): [("modeldeployments", "ModelDeployment", True,
                                          ["get", "list", "watch"])],
}
OWN_GROUPS = [gv for gv in OWN_RESOURCES if gv[0]]


def own_discovery_item(group, version):
    resources = [{"resource": r, "scope": "Namespaced" if ns else "Cluster",
                  "singularResource": kind.lower(), "verbs": verbs,
                  "responseKind": {"group": group, "version": version, "kind": kind}}
                 for r, kind, ns, verbs in OWN_RESOURCES[(group, version)]]
    return {"metadata": {"name": group},
            "versions": [{"version": version, "resources": resources, "freshness": "Current"}]}


def own_resource_list(group, version):
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [{"name": r, "singularName": kind.lower(), "namespaced": ns,
                           "kind": kind, "verbs": verbs}
                          for r, kind, ns, verbs in OWN_RESOURCES[(group, version)]]}


def https_get(url, token, cafile, timeout=30):
    """A GET with a bearer token over verified TLS: (status, body), error statuses included."""
    import urllib.error
    import urllib.request
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    context = ssl.create_default_context(cafile=cafile)
    try:
        with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def allowed(user, groups, verb, group=None, resource=None, path=None):
    subjects = {f"user:{user}"} | {f"group:{g}" for g in groups}

    def match(values, value):
        return "*" in values or value in values or any(
            v.endswith("*") and value.startswith(v[:-1]) for v in values)
    for who, verbs, api_groups, resources, urls in RULES:
        if not who & subjects or not match(verbs, verb):
            continue
        if path is not None and match(urls, path):
            return True
        if path is None and match(api_groups, group) and match(resources, resource):
            return True
    return False


def request_info(method, path):
    """kube-apiserver's RequestInfo, for the paths used here: (verb, group, resource) or None for
    a non-resource path."""
    parts = path.strip("/").split("/")
    verb = {"GET": "get", "POST": "create"}.get(method, method.lower())
    if parts[0] == "api" and len(parts) > 2:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    elif rest[0] == "namespaces":
        return verb, "", "namespaces"
    resource = rest[0]
    if len(rest) == 1 and verb == "get":
        verb = "list"
    if len(rest) > 2:
        resource += "/" + rest[2]
    return verb, group, resource


KINDS = {"pods": "Pod", "replicasets": "ReplicaSet", "deployments": "Deployment",
         "modeldeployments": "ModelDeployment"}


class StandIn:
    def __init__(self, tls, objects_file=None):
        self.tls = tls  # a function naming a test TLS file: tls("ca.pem")
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.stopping = False
        # The object store: (kind, namespace, name) -> object; every change is an event.
        self.rv = 100
        self.store = {}
        self.events = []  # (rv, type, object)
        self.compacted_before = 0  # a watch from an older resourceVersion gets 410
        self.generation = 0  # drop_watches() ends every open watch
        if objects_file is not None:
            with open(objects_file) as f:
                for item in json.load(f)["items"]:
                    self.put(item)
        self.object_requests = 0
        self.watches = 0
        self.token_reviews = 0
        self.access_reviews = []
        self.apiservices = {}  # (group, version) -> (host, port)
        self.proxy_cert = ("proxy-client.pem", "proxy-client-key.pem")
        self.set_trust("requestheader-ca.pem", ["front-proxy"])
        handler = type("Handler", (_Handler,), {"standin": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls("server.pem"), tls("server-key.pem"))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"https://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        with self.lock:
            self.stopping = True
            self.changed.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # -- the object store --------------------------------------------------------------------

    def put(self, obj):
        with self.changed:
            self.rv += 1
            obj = json.loads(json.dumps(obj))
            obj["metadata"]["resourceVersion"] = str(self.rv)
            key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
            kind = "MODIFIED" if key in self.store else "ADDED"
            self.store[key] = obj
            self.events.append((self.rv, kind, obj))
            self.changed.notify_all()

    def add_silent_pod(self, like, name):
        """A copy of Pod `like` (its labels and owner) named `name` whose metrics port nothing
        listens on: a Pod that stopped answering."""
        import socket
        # Bound and never listening, kept for the stand-in's life: a connection is refused, and
        # no other process can take the port in between.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.silent_sockets = getattr(self, "silent_sockets", []) + [s]
        port = s.getsockname()[1]
        with self.lock:
            pod = json.loads(json.dumps(next(o for k, o in self.store.items()
                                             if k[0] == "Pod" and k[2] == like)))
        pod["metadata"]["name"] = name
        pod["metadata"]["uid"] = f"uid-{name}"
        pod["metadata"]["annotations"]["prometheus.io/port"] = str(port)
        for container in pod["spec"]["containers"]:
            for p in container.get("ports", []):
                p["containerPort"] = port
        self.put(pod)

    def delete(self, kind, ns, name):
        with self.changed:
            obj = self.store.pop((kind, ns, name))
            self.rv += 1
            self.events.append((self.rv, "DELETED", obj))
            self.changed.notify_all()

    def drop_watches(self):
        """Ends every open watch stream, as a kube-apiserver restart does."""
        with self.changed:
            self.generation += 1
            self.changed.notify_all()

    def compact(self):
        """As etcd compaction: watches from any resourceVersion before now get 410 Gone."""
        with self.changed:
            self.compacted_before = self.rv + 1
            self.events.clear()

    def kubeconfig(self, path, token):
        path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: {self.url}
    certificate-authority: {self.tls("ca.pem")}
users:
- name: user
  user:
    token: {token}
contexts:
- name: standin
  context: {{cluster: standin, user: user}}
current-context: standin
""")
        return path

    def set_trust(self, requestheader_ca, allowed_names):
        """kube-apiserver writes these into the ConfigMap; a rotation rewrites it."""
        def text(name):
            with open(self.tls(name)) as f:
                return f.read()
        with self.lock:
            self.configmap = {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "extension-apiserver-authentication",
                             "namespace": "kube-system", "resourceVersion": "1"},
                "data": {"client-ca-file": text("ca.pem"),
                         "requestheader-client-ca-file": text(requestheader_ca),
                         "requestheader-allowed-names": json.dumps(allowed_names),
                         "requestheader-username-headers": '["X-Remote-User"]',
                         "requestheader-group-headers": '["X-Remote-Group"]',
                         "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]'}}

    def register(self, group, version, port):
        self.apiservices[(group, version)] = ("127.0.0.1", port)

    # -- kube-aggregator's side ---------------------------------------------------------------

    def call_service(self, group, version, method, path, user, groups, extra=None, accept=None,
                     body=None):
        host, port = self.apiservices[(group, version)]
        context = ssl.create_default_context(cafile=self.tls("ca.pem"))
        context.load_cert_chain(self.tls(self.proxy_cert[0]), self.tls(self.proxy_cert[1]))
        connection = http.client.HTTPSConnection(host, port, context=context, timeout=10)
        headers = {"X-Remote-User": user}
        if accept:
            headers["Accept"] = accept
        try:
            connection.putrequest(method, path, skip_accept_encoding=True)
            for name, value in headers.items():
                connection.putheader(name, value)
            for g in groups:  # one header line per group
                connection.putheader("X-Remote-Group", g)
            for key, values in (extra or {}).items():
                escaped = urllib.parse.quote(key, safe="!#$&'*+-.^_`|~")
                for value in values:
                    connection.putheader(f"X-Remote-Extra-{escaped}", value)
            data = body.encode() if body else b""
            connection.putheader("Content-Length", str(len(data)))
            connection.endheaders(data)
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type", ""), response.read()
        finally:
            connection.close()

    def check_availability(self, group, version):
        """The availability controller's probe: (available, message)."""
        path = f"/apis/{group}/{version}"
        try:
            code, _, _ = self.call_service(group, version, "GET", path, "system:kube-aggregator",
                                           ["system:masters"])
        except OSError as e:
            return False, f"failing or missing response from {path}: {e}"
        if 200 <= code < 300:
            return True, "all checks passed"
        return False, f"failing or missing response from {path}: bad status from {path}: {code}"

    def groups(self):
        """The registered groups with their versions, the first registered preferred (as the
        highest versionPriority is)."""
        out = {}
        for (group, version) in self.apiservices:
            out.setdefault(group, []).append(version)
        return out

    def aggregated_items(self):
        items = []
        for group, versions in self.groups().items():
            version = versions[0]
            code, content_type, body = self.call_service(
                group, version, "GET", "/apis", "system:kube-aggregator", ["system:masters"],
                accept=f"{AGGREGATED_V2},{AGGREGATED_V2BETA1}")
            assert code == 200 and content_type.startswith(AGGREGATED_V2), (code, content_type)
            items += [i for i in json.loads(body)["items"] if i["metadata"]["name"] == group]
        return items


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    standin = None

    def log_message(self, *args):
        pass

    def reply(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self.handle_request("POST")

    def do_GET(self):
        self.handle_request("GET")

    def handle_request(self, method):
        s = self.standin
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if token not in TOKENS:
            return self.reply(401, status(401, "Unauthorized", "Unauthorized"))
        user, groups = TOKENS[token]
        groups = groups + ["system:authenticated"]
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, urllib.parse.parse_qs(url.query)
        info = request_info(method, path)
        if info and query.get("watch", [""])[0] in ("true", "1"):
            info = ("watch",) + info[1:]
        ok = (allowed(user, groups, info[0], info[1], info[2]) if info
              else allowed(user, groups, "get", path=path))
        if not ok:
            what = f'resource "{info[2]}" in API group "{info[1]}"' if info else f'path "{path}"'
            return self.reply(403, status(403, "Forbidden",
                                          f'forbidden: User "{user}" cannot {info[0] if info else "get"} {what}'))
        for (group, version) in s.apiservices:
            prefix = f"/apis/{group}/{version}"
            if path == prefix or path.startswith(prefix + "/") or \
                    path == f"/openapi/v3/apis/{group}/{version}":
                code, content_type, data = s.call_service(
                    group, version, method, self.path, user, groups,
                    extra={"authentication.kubernetes.io/credential-id": [f"JTI={token[:6]}"]},
                    accept=self.headers.get("Accept"), body=body or None)
                return self.reply(code, data, content_type or "application/json")
        if path == "/version":
            return self.reply(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0",
                                    "platform": "linux/amd64"})
        if path == "/api":
            if "as=APIGroupDiscoveryList" in self.headers.get("Accept", ""):
                return self.reply(200, {"kind": "APIGroupDiscoveryList",
                                        "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
                                        "items": [own_discovery_item("", "v1")]}, AGGREGATED_V2)
            return self.reply(200, {"kind": "APIVersions", "versions": ["v1"]})
        if path == "/api/v1":
            return self.reply(200, own_resource_list("", "v1"))
        own = re.fullmatch(r"/apis/([^/]+)/([^/]+)", path)
        if own and (own.group(1), own.group(2)) in OWN_RESOURCES:
            return self.reply(200, own_resource_list(own.group(1), own.group(2)))
        if path == "/apis":
            return self.discovery()
        if path == "/openapi/v3":
            return self.openapi_v3_index()
        if path == "/openapi/v2":
            return self.openapi_v2()
        if path == CONFIGMAP_PATH:
            with s.lock:
                return self.reply(200, s.configmap)
        if path == "/apis/authentication.k8s.io/v1/tokenreviews":
            return self.token_review(json.loads(body))
        if path == "/apis/authorization.k8s.io/v1/subjectaccessreviews":
            return self.access_review(json.loads(body))
        return self.object_request(path, query)

    def discovery(self):
        accept = self.headers.get("Accept", "")
        if "as=APIGroupDiscoveryList" not in accept:
            versions = {g: [v] for g, v in OWN_GROUPS}
            for g, vs in self.standin.groups().items():
                versions[g] = vs + [v for v in versions.get(g, []) if v not in vs]
            groups = [{"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}
                                               for v in vs],
                       "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                      for g, vs in versions.items()]
            return self.reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        own = [own_discovery_item(g, v) for g, v in OWN_GROUPS]
        items = self.standin.aggregated_items()
        # Two versions of one group (the CRD's v1alpha1, the aggregated v1) are one item.
        for item in items:
            same = [o for o in own if o["metadata"]["name"] == item["metadata"]["name"]]
            if same:
                same[0]["versions"] = item["versions"] + same[0]["versions"]
            else:
                own.append(item)
        return self.reply(200, {"kind": "APIGroupDiscoveryList",
                                "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
                                "items": own}, AGGREGATED_V2)

    def openapi_v3_index(self):
        paths = {"version": {"serverRelativeURL": "/openapi/v3/version?hash=0"}}
        for (group, version) in self.standin.apiservices:
            code, _, data = self.standin.call_service(group, version, "GET", "/openapi/v3",
                                                      "system:aggregator", [])
            assert code == 200, code
            paths.update(json.loads(data)["paths"])  # copied verbatim, as kube-aggregator does
        return self.reply(200, {"paths": paths})

    def openapi_v2(self):
        merged = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                  "paths": {}, "definitions": {}}
        for (group, version) in self.standin.apiservices:
            code, _, data = self.standin.call_service(group, version, "GET", "/openapi/v2",
                                                      "system:aggregator", [],
                                                      accept="application/json")
            assert code == 200, code
            spec = json.loads(data)
            merged["paths"].update({p: v for p, v in spec["paths"].items() if p.startswith("/apis/")})
            merged["definitions"].update(spec.get("definitions", {}))
        return self.reply(200, merged)

    def token_review(self, review):
        with self.standin.lock:
            self.standin.token_reviews += 1
        found = TOKENS.get(review["spec"]["token"])
        review["status"] = {"authenticated": found is not None}
        if found:
            review["status"]["user"] = {"username": found[0], "uid": "uid-" + found[0],
                                        "groups": found[1] + ["system:authenticated"]}
        return self.reply(201, review)

    def access_review(self, review):
        spec = review["spec"]
        with self.standin.lock:
            self.standin.access_reviews.append(spec)
        if "nonResourceAttributes" in spec:
            a = spec["nonResourceAttributes"]
            ok = allowed(spec["user"], spec.get("groups", []), a["verb"], path=a["path"])
        else:
            a = spec["resourceAttributes"]
            resource = a["resource"] + ("/" + a["subresource"] if a.get("subresource") else "")
            ok = allowed(spec["user"], spec.get("groups", []), a["verb"], a.get("group", ""),
                         resource)
        review["status"] = {"allowed": ok}
        return self.reply(201, review)

    def object_request(self, path, query):
        s = self.standin
        if query.get("watch", [""])[0] not in ("true", "1"):
            with s.lock:
                s.object_requests += 1  # gets and lists; watches count in s.watches
        m = re.fullmatch(r"/(?:api|apis/([^/]+))/(v1|v1alpha1)(?:/namespaces/([^/]+))?/([^/]+)"
                         r"(?:/([^/]+))?", path)
        if not m or m.group(4) not in KINDS:
            return self.reply(404, status(404, "NotFound", "the server could not find the "
                                                           "requested resource"))
        group, _, ns, resource, name = m.groups()
        kind = KINDS[resource]
        selector = dict(term.split("=", 1) for term in
                        filter(None, query.get("labelSelector", [""])[0].split(",")))

        def wanted(obj):
            return (obj["kind"] == kind and (ns is None or obj["metadata"]["namespace"] == ns) and
                    all(obj["metadata"].get("labels", {}).get(k) == v for k, v in selector.items()))
        if name:
            with s.lock:
                found = s.store.get((kind, ns, name))
            if found is None:
                return self.reply(404, status(404, "NotFound",
                                              f'{resource}{"." + group if group else ""} "{name}" not found'))
            return self.reply(200, found)
        if query.get("watch", [""])[0] in ("true", "1"):
            return self.watch(wanted, int(query.get("resourceVersion", ["0"])[0] or 0),
                              int(query.get("timeoutSeconds", ["300"])[0]))
        with s.lock:
            items = sorted((o for o in s.store.values() if wanted(o)),
                           key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
            rv = s.rv
        limit = int(query.get("limit", ["0"])[0] or 0)
        start = int(query.get("continue", ["0"])[0] or 0)
        page = items[start:start + limit] if limit else items[start:]
        more = limit and start + limit < len(items)
        return self.reply(200, {"kind": kind + "List", "apiVersion": "v1",
                                "metadata": {"resourceVersion": str(rv),
                                             "continue": str(start + limit) if more else ""},
                                "items": page})

    def watch(self, wanted, since, timeout):
        s = self.standin
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(event):
            data = (json.dumps(event) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        with s.lock:
            s.watches += 1
            gone = since < s.compacted_before
            generation = s.generation
        try:
            if gone:  # as kube-apiserver: a 200 stream whose one event is the 410
                send({"type": "ERROR", "object": status(
                    410, "Expired", f"too old resource version: {since} ({s.compacted_before})")})
            else:
                deadline = time.monotonic() + timeout
                last = since
                while time.monotonic() < deadline:
                    with s.changed:
                        pending = [e for e in s.events if e[0] > last]
                        if not pending and not s.stopping:
                            s.changed.wait(timeout=1.0)
                            pending = [e for e in s.events if e[0] > last]
                        stopping, rv = s.stopping or s.generation != generation, s.rv
                    if stopping:
                        break
                    for event_rv, kind, obj in pending:
                        last = event_rv
                        if wanted(obj):
                            send({"type": kind, "object": obj})
                    if not pending:
                        last = max(last, rv)
                        send({"type": "BOOKMARK", "object": {
                            "kind": "Bookmark", "metadata": {"resourceVersion": str(last)}}})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True
