// Validates the Kubernetes objects in a multi-document YAML on stdin (`kubectl kustomize` output)
// against their OpenAPI schemas, offline: kubernetes-models for the core groups and
// apiregistration, its cert-manager and prometheus-operator packages for those CRDs. Prints one
// line per object and exits 1 when any fails or has no schema here.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
// Packages resolve from the working directory: the test runs this where `npm ci` installed them.
const require = createRequire(process.cwd() + "/");
const { parseAllDocuments } = require("yaml");
const text = readFileSync(0, "utf8");
let failed = 0, count = 0;
for (const doc of parseAllDocuments(text)) {
  const obj = doc.toJSON();
  if (!obj) continue;
  count++;
  const [group, version] = obj.apiVersion.includes("/") ? obj.apiVersion.split("/") : ["", obj.apiVersion];
  let mod;
  try {
    if (group === "cert-manager.io") mod = require(`@kubernetes-models/cert-manager/${group}/${version}/${obj.kind}`);
    else if (group === "monitoring.coreos.com") mod = require(`@kubernetes-models/prometheus-operator/${group}/${version}/${obj.kind}`);
    else mod = require(`kubernetes-models/${group ? group + "/" : ""}${version}/${obj.kind}`);
  } catch (e) { console.log(`no schema for ${obj.apiVersion} ${obj.kind}`); failed++; continue; }
  const Model = mod[obj.kind];
  try { new Model(obj).validate(); console.log(`ok ${obj.kind} ${obj.metadata.name}`); }
  catch (e) { failed++; console.log(`FAIL ${obj.kind} ${obj.metadata?.name}: ${e.message}`); }
}
console.log(`${count} objects, ${failed} failed`);
process.exit(failed ? 1 : 0);
