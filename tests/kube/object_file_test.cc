// Tests of the file ObjectSource: the shared example objects as JSON, the same objects as YAML (a
// List and `---` documents), clear errors for bad files, and Kubernetes' NotFound wording.
#include "kube/object_file.h"
#include "kube/object_test_files.h"
#include "status_matchers.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using ::modelmetrics::testing::ExamplePath;
using ::modelmetrics::testing::TempDir;
using nlohmann::json;

// objects-example.json, written by hand as YAML: unquoted integers and booleans, quoted
// annotation values, a single-quoted JSON argument, flow and block styles mixed.
constexpr char kExampleYamlItems[] = R"(
- apiVersion: worker.gpustack.ai/v1alpha1
  kind: ModelDeployment
  metadata: {name: chat, namespace: team, uid: md-one}
  spec:
    model: {name: Qwen/Qwen2.5-0.5B-Instruct}
    engine: {name: vllm, version: 0.11.0}
    kvCache:
      poolRef: {name: shared-pool}
      connector: mooncake
    roles:
    - {name: prompt, kind: prefill, replicas: 1, size: 1, instanceType: gpu}
    - name: generation
      kind: decode
      replicas: 2
      size: 1
      instanceType: gpu
    router: {name: llm-d-router, replicas: 1}
- apiVersion: v1
  kind: Pod
  metadata:
    name: chat-prompt-0
    namespace: team
    uid: pod-prompt-0
    labels:
      app.kubernetes.io/name: model-deployment
      app.kubernetes.io/instance: chat
      app.kubernetes.io/component: prompt
    annotations:
      prometheus.io/scrape: "true"
      prometheus.io/path: /metrics
      prometheus.io/port: "18001"
    ownerReferences:
    - apiVersion: worker.gpustack.ai/v1alpha1
      kind: ModelDeployment
      name: chat
      uid: md-one
      controller: true
  spec:
    containers:
    - name: engine
      image: vllm/vllm-openai:v0.11.0
      command: [vllm, serve]
      args:
      - Qwen/Qwen2.5-0.5B-Instruct
      - --port
      - "18001"
      - --kv-transfer-config
      - '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer"}'
      ports:
      - {name: http, containerPort: 18001, protocol: TCP}
  status: {podIP: 127.0.0.1, phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: chat-generation-0
    namespace: team
    uid: pod-generation-0
    labels: {app.kubernetes.io/name: model-deployment, app.kubernetes.io/instance: chat,
             app.kubernetes.io/component: generation}
    annotations: {prometheus.io/scrape: "true", prometheus.io/path: /metrics,
                  prometheus.io/port: '18002'}
    ownerReferences:
    - {apiVersion: worker.gpustack.ai/v1alpha1, kind: ModelDeployment, name: chat, uid: md-one,
       controller: true}
  spec:
    containers:
    - name: engine
      image: vllm/vllm-openai:v0.11.0
      command: [vllm, serve]
      args: [Qwen/Qwen2.5-0.5B-Instruct, --port, "18002", --kv-transfer-config,
             '{"kv_connector":"MooncakeConnector","kv_role":"kv_consumer"}']
      ports: [{name: http, containerPort: 18002, protocol: TCP}]
  status:
    podIP: 127.0.0.1
    phase: Running
- apiVersion: v1
  kind: Pod
  metadata:
    name: chat-router-7c9f-abcde
    namespace: team
    uid: pod-router-0
    labels:
      app.kubernetes.io/name: model-deployment
      app.kubernetes.io/instance: chat
      modeldeployment.gpustack.ai/router: llm-d-router
    annotations:
      prometheus.io/scrape: "true"
      prometheus.io/path: "/metrics"
      prometheus.io/port: "19090"
    ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: chat-router-7c9f, uid: rs-router,
       controller: true}
  spec:
    containers:
    - name: router
      image: llm-d/llm-d-inference-scheduler:v0.3.0
      ports:
      - name: metrics
        containerPort: 19090
        protocol: TCP
  status: {podIP: 127.0.0.1, phase: Running}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    name: chat-router-7c9f
    namespace: team
    uid: rs-router
    ownerReferences:
    - {apiVersion: apps/v1, kind: Deployment, name: chat-router, uid: dep-router, controller: true}
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: chat-router
    namespace: team
    uid: dep-router
    ownerReferences:
    - apiVersion: worker.gpustack.ai/v1alpha1
      kind: ModelDeployment
      name: chat
      uid: md-one
      controller: true
)";

std::string ExampleYamlList() {
  return std::string("apiVersion: v1\nkind: List\nitems:") + kExampleYamlItems;
}

// The same items as `---` documents: every "- " at column 0 starts a document.
std::string ExampleYamlDocuments() {
  std::string out = "# leading comment\n---\n";
  std::string items = kExampleYamlItems;
  size_t pos = 0;
  bool first = true;
  while (pos < items.size()) {
    size_t end = items.find('\n', pos);
    if (end == std::string::npos) end = items.size();
    std::string line = items.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    if (line.rfind("- ", 0) == 0) {
      if (!first) out += "---\n";
      first = false;
      out += line.substr(2) + "\n";
    } else {
      out += line.substr(2) + "\n";  // un-indent the item's block
    }
  }
  return out + "---\n";  // a trailing empty document is dropped
}

ObjectSet LoadExampleJson() {
  FileObjectSource source;
  std::string error;
  EXPECT_OK(source.Load(ExamplePath()));
  ObjectSet set;
  std::ifstream file(ExamplePath());
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_OK(DecodeObjects(text, &set));
  return set;
}

void ExpectSameObjects(const ObjectSet& a, const ObjectSet& b) {
  EXPECT_EQ(a.model_deployments, b.model_deployments);
  EXPECT_EQ(a.pods, b.pods);
  EXPECT_EQ(a.replica_sets, b.replica_sets);
  EXPECT_EQ(a.deployments, b.deployments);
}

TEST(ObjectFileTest, ReadsTheSharedExampleJson) {
  ObjectSet set = LoadExampleJson();
  ASSERT_EQ(set.model_deployments.size(), 1u);
  ASSERT_EQ(set.pods.size(), 3u);
  ASSERT_EQ(set.replica_sets.size(), 1u);
  ASSERT_EQ(set.deployments.size(), 1u);

  const ModelDeployment& md = set.model_deployments[0];
  EXPECT_EQ(md.metadata.name, "chat");
  EXPECT_EQ(md.metadata.namespace_, "team");
  EXPECT_EQ(md.metadata.uid, "md-one");
  EXPECT_EQ(md.engine, "vllm");
  EXPECT_TRUE(md.kv_cache);
  EXPECT_TRUE(md.IsPrefillDecode());
  ASSERT_EQ(md.roles.size(), 2u);
  EXPECT_EQ(md.roles[1].name, "generation");
  EXPECT_EQ(md.roles[1].replicas, 2);
  EXPECT_EQ(md.roles[1].size, 1);
  ASSERT_TRUE(md.router.has_value());
  EXPECT_EQ(md.router->name, kRouterLlmd);
  EXPECT_EQ(md.router->replicas, 1);

  const Pod& prompt = set.pods[0];
  EXPECT_EQ(prompt.metadata.name, "chat-prompt-0");
  EXPECT_EQ(prompt.metadata.Label(kLabelComponent), "prompt");
  EXPECT_EQ(prompt.metadata.annotations.at("prometheus.io/port"), "18001");
  ASSERT_EQ(prompt.containers.size(), 1u);
  EXPECT_EQ(prompt.containers[0].args.back(),
            R"({"kv_connector":"MooncakeConnector","kv_role":"kv_producer"})");
  EXPECT_EQ(prompt.containers[0].ports.at(0).container_port, 18001);
  EXPECT_EQ(prompt.pod_ip, "127.0.0.1");

  const Pod& router = set.pods[2];
  EXPECT_EQ(router.metadata.Label(kLabelRouter), "llm-d-router");
  ASSERT_NE(router.metadata.Controller(), nullptr);
  EXPECT_EQ(router.metadata.Controller()->kind, "ReplicaSet");
  EXPECT_EQ(set.replica_sets[0].metadata.Controller()->name, "chat-router");
  EXPECT_EQ(set.deployments[0].metadata.Controller()->uid, "md-one");
}

TEST(ObjectFileTest, YamlListGivesTheSameObjectsAsJson) {
  TempDir dir;
  FileObjectSource source;
  std::string error;
  ASSERT_OK(source.Load(dir.Write("objects.yaml", ExampleYamlList())));
  ObjectSet yaml;
  ASSERT_OK(DecodeObjects(ExampleYamlList(), &yaml));
  ExpectSameObjects(yaml, LoadExampleJson());
  // Quoted numbers stayed strings through the YAML conversion.
  EXPECT_EQ(yaml.pods[1].metadata.annotations.at("prometheus.io/port"), "18002");
  EXPECT_EQ(yaml.pods[0].containers[0].args[2], "18001");

  ModelDeployment md;
  ASSERT_TRUE(source.GetModelDeployment("team", "chat", &md).ok());
  EXPECT_EQ(md, yaml.model_deployments[0]);
}

TEST(ObjectFileTest, YamlDocumentsGiveTheSameObjectsAsJson) {
  ObjectSet yaml;
  std::string error;
  ASSERT_OK(DecodeObjects(ExampleYamlDocuments(), &yaml));
  ExpectSameObjects(yaml, LoadExampleJson());
}

TEST(ObjectFileTest, SingleObjectAndTypedLists) {
  ObjectSet set;
  std::string error;
  ASSERT_OK(DecodeObjects(R"({"kind": "Pod", "metadata": {"name": "p", "namespace": "n"}})", &set));
  ASSERT_EQ(set.pods.size(), 1u);
  EXPECT_EQ(set.pods[0].metadata.name, "p");

  // The API's own typed lists (PodList, ...) read like a List.
  ASSERT_OK(
      DecodeObjects("kind: PodList\nitems:\n- kind: Pod\n  metadata: {name: a}\n- kind: "
                    "Pod\n  metadata: {name: b}\n",
                    &set));
  ASSERT_EQ(set.pods.size(), 2u);
  EXPECT_EQ(set.pods[1].metadata.name, "b");

  ASSERT_OK(DecodeObjects(R"({"kind": "List", "items": []})", &set));
  EXPECT_TRUE(set.pods.empty());
}

TEST(ObjectFileTest, OtherKindsAreSkipped) {
  ObjectSet set;
  std::string error;
  ASSERT_OK(DecodeObjects(R"({"kind": "List", "items": [
      {"kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": "not checked"}},
      {"kind": "ReplicaSet", "metadata": {"name": "rs"}}]})",
                          &set));
  EXPECT_EQ(set.replica_sets.size(), 1u);
  EXPECT_TRUE(set.pods.empty());
}

TEST(ObjectFileTest, UnquotedNumberWhereAStringBelongsIsAnError) {
  ObjectSet set;
  std::string error;
  EXPECT_FALSE(Ok(
      DecodeObjects(
          "kind: Pod\nmetadata:\n  name: p\n  annotations:\n    prometheus.io/port: 18001\n", &set),
      &error));
  EXPECT_EQ(error, "Pod p: metadata.annotations[\"prometheus.io/port\"]: expected a string");
}

TEST(ObjectFileTest, DecodeErrorsNameTheItem) {
  ObjectSet set;
  std::string error;
  EXPECT_FALSE(Ok(DecodeObjects(R"({"kind": "List", "items": [
      {"kind": "Service"}, {"kind": "Pod", "metadata": {"name": "a"}},
      {"kind": "ReplicaSet"}, {"kind": "Pod", "metadata": {"name": "chat-0"},
                               "spec": {"containers": {}}}]})",
                                &set),
                  &error));
  EXPECT_EQ(error, "items[3] (Pod chat-0): spec.containers: expected an array");

  EXPECT_FALSE(Ok(DecodeObjects(R"({"kind": "List", "items": [{"metadata": {}}]})", &set), &error));
  EXPECT_EQ(error, "items[0]: missing kind");
  EXPECT_FALSE(Ok(DecodeObjects(R"({"kind": "List", "items": [3]})", &set), &error));
  EXPECT_EQ(error, "items[0]: expected an object");
  EXPECT_FALSE(Ok(DecodeObjects(R"({"kind": "List", "items": {}})", &set), &error));
  EXPECT_EQ(error, "items: expected an array");

  EXPECT_FALSE(
      Ok(DecodeObjects(
             "kind: Pod\nmetadata: {name: a}\n---\nkind: ModelDeployment\nmetadata: {name: chat}\n"
             "spec: {roles: [{replicas: two}]}\n",
             &set),
         &error));
  EXPECT_EQ(error,
            "document 2 (ModelDeployment chat): spec.roles[0].replicas: expected an integer");

  EXPECT_FALSE(
      Ok(DecodeObjects("---\nkind: List\nitems:\n- kind: Pod\n  status: {podIP: [1]}\n---\n"
                       "kind: Pod\n",
                       &set),
         &error));
  EXPECT_EQ(error, "document 1: items[0] (Pod): status.podIP: expected a string");

  EXPECT_FALSE(Ok(DecodeObjects("just a string\n", &set), &error));
  EXPECT_EQ(error, "expected an object or a List");
}

TEST(ObjectFileTest, SyntaxErrorsGiveLineAndColumn) {
  ObjectSet set;
  std::string error;
  EXPECT_FALSE(Ok(DecodeObjects("{\"kind\": \"List\",\n \"items\": [}\n", &set), &error));
  EXPECT_EQ(error.rfind("invalid JSON: parse error at line 2, column ", 0), 0u) << error;

  EXPECT_FALSE(Ok(DecodeObjects("kind: List\nitems: [a,\nb: 2\n", &set), &error));
  EXPECT_EQ(error.rfind("invalid YAML: line ", 0), 0u) << error;

  EXPECT_FALSE(Ok(DecodeObjects(" \n\t\n", &set), &error));
  EXPECT_EQ(error, "no objects: the text is empty");
}

TEST(ObjectFileTest, LoadErrorsNameTheFile) {
  TempDir dir;
  FileObjectSource source;
  std::string error;
  std::string missing = dir.Write("placeholder", "") + "-missing.json";
  EXPECT_FALSE(Ok(source.Load(missing), &error));
  EXPECT_EQ(error, missing + ": cannot open: No such file or directory");

  std::string bad = dir.Write("bad.json", R"({"kind": "Pod", "metadata": {"name": 1}})");
  EXPECT_FALSE(Ok(source.Load(bad), &error));
  EXPECT_EQ(error, bad + ": Pod: metadata.name: expected a string");
}

TEST(ObjectFileTest, FailedReloadKeepsTheObjectsServed) {
  TempDir dir;
  FileObjectSource source;
  std::string error;
  std::string path = dir.Write("objects.json", R"({"kind": "ReplicaSet",
      "metadata": {"name": "one", "namespace": "n"}})");
  ASSERT_OK(source.Load(path));
  dir.Write("objects.json", "{broken");
  EXPECT_FALSE(Ok(source.Load(path), &error));
  ReplicaSet rs;
  EXPECT_TRUE(source.GetReplicaSet("n", "one", &rs).ok());

  dir.Write("objects.json", R"({"kind": "ReplicaSet", "metadata": {"name": "two",
      "namespace": "n"}})");
  ASSERT_OK(source.Load(path));
  EXPECT_TRUE(source.GetReplicaSet("n", "one", &rs).not_found());
  EXPECT_TRUE(source.GetReplicaSet("n", "two", &rs).ok());
}

std::string ModelDeploymentJson(const std::string& uid) {
  return R"({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment",
      "metadata": {"name": "chat", "namespace": "n", "uid": ")" +
         uid + R"("}, "spec": {"engine": {"name": "vllm"}, "roles": []}})";
}

std::string ServedUid(FileObjectSource& source) {
  ModelDeployment md;
  const Status status = source.GetModelDeployment("n", "chat", &md);
  return status.ok() ? md.metadata.uid : "<" + status.message() + ">";
}

// Sets a file's modification time `seconds` into the past, so a rewrite within the same clock
// tick still gives a new identity (size alone may not change).
void Age(const std::string& path, int seconds) {
  const auto now = std::filesystem::last_write_time(path);
  std::filesystem::last_write_time(path, now - std::chrono::seconds(seconds));
}

TEST(ObjectFileTest, LiveFileFollowsRewritesRenamesAndKeepsTheLastGoodSet) {
  TempDir dir;
  FileObjectSource source;
  std::vector<std::string> logged;
  source.SetErrorLog([&](const std::string& line) { logged.push_back(line); });
  std::string error;
  const std::string path = dir.Write("objects.json", ModelDeploymentJson("uid-1"));
  Age(path, 10);
  ASSERT_OK(source.Load(path));
  EXPECT_EQ(ServedUid(source), "uid-1");

  // Rewritten in place: seen by the next read.
  dir.Write("objects.json", ModelDeploymentJson("uid-2"));
  EXPECT_EQ(ServedUid(source), "uid-2");
  Age(path, 10);

  // Atomic rename-replace (what the simulator and kubectl-driven tooling do).
  const std::string staged = dir.Write("objects.json.tmp", ModelDeploymentJson("uid-3"));
  std::filesystem::rename(staged, path);
  EXPECT_EQ(ServedUid(source), "uid-3");
  Age(path, 10);

  // Half-written: the last good set stays, the error is reported once for this version.
  dir.Write("objects.json", ModelDeploymentJson("uid-4").substr(0, 40));
  EXPECT_EQ(ServedUid(source), "uid-3");
  EXPECT_EQ(ServedUid(source), "uid-3");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find(path + ": "), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("still serving the last good objects"), std::string::npos);
  EXPECT_FALSE(source.last_error().empty());
  Age(path, 5);

  // Finished: picked up, error cleared.
  dir.Write("objects.json", ModelDeploymentJson("uid-4"));
  EXPECT_EQ(ServedUid(source), "uid-4");
  EXPECT_EQ(source.last_error(), "");

  // Deleted: keeps serving; comes back: followed again.
  std::filesystem::remove(path);
  EXPECT_EQ(ServedUid(source), "uid-4");
  dir.Write("objects.json", ModelDeploymentJson("uid-5"));
  EXPECT_EQ(ServedUid(source), "uid-5");

  // Set() serves objects directly and stops following the file.
  source.Set(ObjectSet{});
  dir.Write("objects.json", ModelDeploymentJson("uid-6"));
  EXPECT_EQ(ServedUid(source).substr(0, 1), "<");
  EXPECT_EQ(logged.size(), 1u);
}

// Two same-size versions written within one modification-time tick: the second is still seen,
// since a version younger than a second is read again on the next call.
TEST(ObjectFileTest, LiveFileSeesASameSizeRewriteWithinOneClockTick) {
  TempDir dir;
  FileObjectSource source;
  std::string error;
  const std::string path = dir.Write("objects.json", ModelDeploymentJson("uid-a"));
  ASSERT_OK(source.Load(path));
  EXPECT_EQ(ServedUid(source), "uid-a");
  const auto mtime = std::filesystem::last_write_time(path);
  dir.Write("objects.json", ModelDeploymentJson("uid-b"));
  std::filesystem::last_write_time(path, mtime);  // same size, same mtime, same inode
  EXPECT_EQ(ServedUid(source), "uid-b");
}

// Found by the objects fuzzer: nlohmann reports a number beyond double's range as out_of_range,
// not parse_error; it is a one-line error like any other, never an escaped exception.
TEST(ObjectFileTest, JsonNumberOutOfRangeIsAnError) {
  ObjectSet objects;
  std::string error;
  EXPECT_FALSE(Ok(DecodeObjects(R"({"kind": "List", "items": 6666666E666666})", &objects), &error));
  EXPECT_EQ(error, "invalid JSON: number overflow parsing '6666666E666666'");
  EXPECT_FALSE(Ok(DecodeObjects("[1E" + std::string(1000, '9') + "]", &objects), &error));
  EXPECT_LE(error.size(), 220u);
}

TEST(ObjectFileTest, GettersFindByNamespaceAndNameWithKubernetesNotFound) {
  FileObjectSource source;
  std::string error;
  ASSERT_OK(source.Load(ExamplePath()));

  ModelDeployment md;
  Status status = source.GetModelDeployment("team", "chat", &md);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(md.metadata.uid, "md-one");

  status = source.GetModelDeployment("team", "nope", &md);
  EXPECT_EQ(status.code(), 404);
  EXPECT_EQ(status.reason(), "NotFound");
  EXPECT_EQ(status.message(), R"(modeldeployments.worker.gpustack.ai "nope" not found)");
  status = source.GetModelDeployment("other", "chat", &md);  // right name, wrong namespace
  EXPECT_EQ(status.message(), R"(modeldeployments.worker.gpustack.ai "chat" not found)");

  ReplicaSet rs;
  ASSERT_TRUE(source.GetReplicaSet("team", "chat-router-7c9f", &rs).ok());
  EXPECT_EQ(rs.metadata.uid, "rs-router");
  status = source.GetReplicaSet("team", "x", &rs);
  EXPECT_TRUE(status.not_found());
  EXPECT_EQ(status.message(), R"(replicasets.apps "x" not found)");

  Deployment deployment;
  ASSERT_TRUE(source.GetDeployment("team", "chat-router", &deployment).ok());
  EXPECT_EQ(deployment.metadata.uid, "dep-router");
  status = source.GetDeployment("team", "x", &deployment);
  EXPECT_TRUE(status.not_found());
  EXPECT_EQ(status.message(), R"(deployments.apps "x" not found)");
}

std::vector<std::string> PodNames(const std::vector<Pod>& pods) {
  std::vector<std::string> names;
  for (const Pod& pod : pods) names.push_back(pod.metadata.name);
  return names;
}

TEST(ObjectFileTest, ListPodsFiltersByNamespaceAndSelector) {
  FileObjectSource source;
  std::string error;
  ASSERT_OK(source.Load(ExamplePath()));
  std::vector<Pod> pods;
  ASSERT_TRUE(
      source
          .ListPods("team",
                    "app.kubernetes.io/name=model-deployment,app.kubernetes.io/instance=chat",
                    &pods)
          .ok());
  EXPECT_EQ(PodNames(pods), (std::vector<std::string>{"chat-prompt-0", "chat-generation-0",
                                                      "chat-router-7c9f-abcde"}));
  ASSERT_TRUE(source.ListPods("team", "app.kubernetes.io/component=generation", &pods).ok());
  EXPECT_EQ(PodNames(pods), (std::vector<std::string>{"chat-generation-0"}));
  ASSERT_TRUE(source.ListPods("team", "app.kubernetes.io/instance=other", &pods).ok());
  EXPECT_TRUE(pods.empty());
  ASSERT_TRUE(source.ListPods("elsewhere", "", &pods).ok());
  EXPECT_TRUE(pods.empty());
  ASSERT_TRUE(source.ListPods("", "modeldeployment.gpustack.ai/router=llm-d-router", &pods).ok());
  EXPECT_EQ(PodNames(pods), (std::vector<std::string>{"chat-router-7c9f-abcde"}));
}

TEST(ObjectFileTest, SetAndConcurrentReadsAreSafe) {
  FileObjectSource source;
  ObjectSet one;
  one.deployments.push_back({});
  one.deployments[0].metadata.name = "d";
  one.deployments[0].metadata.namespace_ = "n";
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) source.Set(i % 2 == 0 ? one : ObjectSet{});
  });
  // Each read sees one whole set or the other (TSan checks there is no torn state).
  for (int i = 0; i < 200; ++i) {
    Deployment d;
    Status status = source.GetDeployment("n", "d", &d);
    ASSERT_TRUE(status.ok() || status.not_found());
    if (status.ok()) {
      EXPECT_EQ(d.metadata.name, "d");
    }
  }
  writer.join();
  source.Set(one);
  Deployment d;
  EXPECT_TRUE(source.GetDeployment("n", "d", &d).ok());
}

}  // namespace
}  // namespace modelmetrics::deployment

namespace modelmetrics::deployment {
namespace {

// A "billion laughs" document: nine levels of aliases name 10^9 scalars in a few hundred bytes.
// Decoding stops at the node budget with an error instead of expanding it.
TEST(ObjectFileTest, AliasBombIsRefused) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    yaml += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) yaml += (i ? ", " : "") + prev;
    yaml += "]\n";
  }
  ObjectSet objects;
  std::string error;
  EXPECT_FALSE(Ok(DecodeObjects(yaml, &objects), &error));
  EXPECT_NE(error.find("nodes once aliases are expanded"), std::string::npos) << error;
}

}  // namespace
}  // namespace modelmetrics::deployment

namespace modelmetrics::deployment {
namespace {

// JSON objects files get the YAML reader's bounds: a few megabytes of `[` used to build millions
// of nested arrays (over 300 MB); now it is an error, found without storing them.
TEST(ObjectFileTest, JsonIsBoundedLikeYaml) {
  ObjectSet objects;
  std::string error;
  const std::string deep(4'000'000, '[');
  EXPECT_FALSE(Ok(DecodeObjects(deep, &objects), &error));
  EXPECT_EQ(error, "invalid JSON: nested deeper than 128");
  const std::string just_deep_enough = std::string(128, '[') + std::string(128, ']');
  EXPECT_FALSE(Ok(DecodeObjects(just_deep_enough, &objects), &error));
  EXPECT_EQ(error, "items[0]: expected an object");  // parsed; not objects
  std::string many = "[";
  for (int i = 0; i < 1'000'001; ++i) many += "0,";
  many += "0]";
  EXPECT_FALSE(Ok(DecodeObjects(many, &objects, many.size()), &error));
  EXPECT_EQ(error, "invalid JSON: more than 1000000 nodes");
  EXPECT_FALSE(Ok(DecodeObjects(R"({"kind": "List", "items": []})", &objects, 10), &error));
  EXPECT_EQ(error, "invalid JSON: the text is 29 bytes, over the 10-byte limit");
}

}  // namespace
}  // namespace modelmetrics::deployment
