// Tests of the Kubernetes object model: the JSON decoders (fields, both spellings of engine names
// and role kinds, every error path naming its field) and label-selector matching.
#include "kube/objects.h"
#include "status_matchers.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using nlohmann::json;

// Decodes `text` (JSON) with `decode`, expecting failure; returns the error.
template <class T>
std::string DecodeError(Status (*decode)(const json&, T*), const std::string& text) {
  T out;
  const Status decoded = decode(json::parse(text), &out);
  EXPECT_FALSE(decoded.ok()) << text;
  return decoded.message();
}

TEST(ObjectsTest, EqualsIgnoreCaseComparesAsciiLetters) {
  EXPECT_TRUE(EqualsIgnoreCase("vLLM", "vllm"));
  EXPECT_TRUE(EqualsIgnoreCase("SGLang", kEngineSglang));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("vllm", "vllm2"));
  EXPECT_FALSE(EqualsIgnoreCase("vllm", "vlln"));
  EXPECT_TRUE(IsVllmEngine("VLLM"));
  EXPECT_FALSE(IsVllmEngine("sglang"));
}

TEST(ObjectsTest, DecodesModelDeploymentWithEveryField) {
  json md = json::parse(R"({
    "apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment",
    "metadata": {"name": "chat", "namespace": "team", "uid": "md-one",
                 "labels": {"a": "b"}, "annotations": {"note": "x"}},
    "spec": {
      "engine": {"name": "vLLM", "version": "0.11.0"},
      "kvCache": {"poolRef": {"name": "pool"}},
      "roles": [
        {"name": "prompt", "kind": "Prefill", "replicas": 1, "size": 2},
        {"name": "generation", "kind": "decode", "replicas": 3, "command": ["python", "x.py"]}
      ],
      "router": {"name": "llm-d-router", "replicas": 2},
      "unknownField": {"ignored": true}
    }
  })");
  ModelDeployment out;
  std::string error;
  ASSERT_OK(DecodeModelDeployment(md, &out));
  EXPECT_EQ(out.metadata.name, "chat");
  EXPECT_EQ(out.metadata.namespace_, "team");
  EXPECT_EQ(out.metadata.uid, "md-one");
  EXPECT_EQ(out.metadata.Label("a"), "b");
  EXPECT_EQ(out.metadata.Label("missing"), "");
  EXPECT_EQ(out.metadata.annotations.at("note"), "x");
  EXPECT_EQ(out.engine, "vLLM");
  EXPECT_TRUE(IsVllmEngine(out.engine));
  EXPECT_TRUE(out.kv_cache);
  ASSERT_EQ(out.roles.size(), 2u);
  EXPECT_EQ(out.roles[0].name, "prompt");
  EXPECT_EQ(out.roles[0].kind, "Prefill");
  EXPECT_TRUE(out.roles[0].IsPrefill());
  EXPECT_FALSE(out.roles[0].IsDecode());
  EXPECT_EQ(out.roles[0].replicas, 1);
  EXPECT_EQ(out.roles[0].size, 2);
  EXPECT_TRUE(out.roles[0].command.empty());
  EXPECT_TRUE(out.roles[1].IsDecode());
  EXPECT_EQ(out.roles[1].replicas, 3);
  EXPECT_EQ(out.roles[1].size, 0);  // unset reads as 0
  EXPECT_EQ(out.roles[1].command, (std::vector<std::string>{"python", "x.py"}));
  ASSERT_TRUE(out.router.has_value());
  EXPECT_EQ(out.router->name, "llm-d-router");
  EXPECT_EQ(out.router->replicas, 2);
  EXPECT_TRUE(out.IsPrefillDecode());
  ASSERT_NE(out.FindRole("generation"), nullptr);
  EXPECT_EQ(out.FindRole("generation")->replicas, 3);
  EXPECT_EQ(out.FindRole("Generation"), nullptr);  // role names are exact
}

TEST(ObjectsTest, ModelDeploymentDefaultsWhenFieldsAreAbsentOrNull) {
  ModelDeployment out;
  std::string error;
  ASSERT_OK(DecodeModelDeployment(json::parse(R"({"metadata": {"name": "m"},
                      "spec": {"engine": {"name": "sglang"}, "kvCache": null, "router": null,
                               "roles": [{"name": "s", "kind": "server"}]}})"),
                                  &out));
  EXPECT_FALSE(out.kv_cache);
  EXPECT_FALSE(out.router.has_value());
  EXPECT_FALSE(out.IsPrefillDecode());
  EXPECT_FALSE(IsVllmEngine(out.engine));

  ASSERT_OK(
      DecodeModelDeployment(json::parse(R"({"spec": {"router": {"name": "vllm-router"}}})"), &out));
  ASSERT_TRUE(out.router.has_value());
  EXPECT_FALSE(out.router->replicas.has_value());  // nil replicas: coverage expects 1

  ASSERT_OK(DecodeModelDeployment(json::parse("{}"), &out));
  EXPECT_TRUE(out.roles.empty());
  EXPECT_TRUE(out.metadata.name.empty());
}

TEST(ObjectsTest, PrefillDecodeNeedsBothKindsInAnyCase) {
  ModelDeployment md;
  md.roles = {{.name = "p", .kind = "PREFILL"}};
  EXPECT_FALSE(md.IsPrefillDecode());
  md.roles.push_back({.name = "d", .kind = "Decode"});
  EXPECT_TRUE(md.IsPrefillDecode());
  md.roles = {{.name = "s", .kind = "Server"}, {.name = "d", .kind = "decode"}};
  EXPECT_FALSE(md.IsPrefillDecode());
}

TEST(ObjectsTest, RoleSizeFallsBackToReplicaSize) {
  ModelDeployment out;
  std::string error;
  ASSERT_OK(
      DecodeModelDeployment(json::parse(R"({"spec": {"roles": [{"name": "a", "replicaSize": 4},
                                          {"name": "b", "size": 2, "replicaSize": 9}]}})"),
                            &out));
  EXPECT_EQ(out.roles[0].size, 4);
  EXPECT_EQ(out.roles[1].size, 2);  // `size` is the field; the alias only fills in for it
}

TEST(ObjectsTest, ModelDeploymentErrorsNameTheField) {
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": [{"replicas": "1"}]}})"),
            "spec.roles[0].replicas: expected an integer");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": [{}, {"size": 1.5}]}})"),
            "spec.roles[1].size: expected an integer");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": [{"replicas": 1.0}]}})"),
            "spec.roles[0].replicas: expected an integer");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": [{"size": 4294967296}]}})"),
            "spec.roles[0].size: integer out of 32-bit range");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": {}}})"),
            "spec.roles: expected an array");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": ["x"]}})"),
            "spec.roles[0]: expected an object");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": [{"command": "vllm"}]}})"),
            "spec.roles[0].command: expected an array");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"roles": [{"command": ["a", 1]}]}})"),
            "spec.roles[0].command[1]: expected a string");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"engine": "vllm"}})"),
            "spec.engine: expected an object");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"engine": {"name": 3}}})"),
            "spec.engine.name: expected a string");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": {"router": {"replicas": "2"}}})"),
            "spec.router.replicas: expected an integer");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"spec": []})"), "spec: expected an object");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"metadata": {"uid": 7}})"),
            "metadata.uid: expected a string");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"({"metadata": {"labels": {"a": 1}}})"),
            "metadata.labels[\"a\"]: expected a string");
  EXPECT_EQ(DecodeError(&DecodeModelDeployment, R"([])"), "expected an object");
}

TEST(ObjectsTest, DecodeFailureLeavesOutputUntouched) {
  ModelDeployment out;
  out.metadata.name = "before";
  std::string error;
  EXPECT_FALSE(
      Ok(DecodeModelDeployment(
             json::parse(R"({"metadata": {"name": "after"}, "spec": {"roles": 1}})"), &out),
         &error));
  EXPECT_EQ(out.metadata.name, "before");
}

TEST(ObjectsTest, DecodesPodContainersPortsAndStatus) {
  json pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
      "name": "chat-0", "namespace": "team", "uid": "pod-0",
      "labels": {"app.kubernetes.io/component": "server"},
      "annotations": {"prometheus.io/port": "18001"},
      "ownerReferences": [
        {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "u0"},
        {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment", "name": "chat",
         "uid": "md-one", "controller": true, "blockOwnerDeletion": true}]
    },
    "spec": {
      "initContainers": [{"name": "sidecar", "ports": [{"containerPort": 9000}]}],
      "containers": [{"name": "engine", "image": "vllm", "command": ["vllm", "serve"],
                      "args": ["--port", "18001"],
                      "ports": [{"name": "http", "containerPort": 18001, "protocol": "TCP"}]}]
    },
    "status": {"podIP": "10.0.0.7", "phase": "Running", "conditions": []}
  })");
  Pod out;
  std::string error;
  ASSERT_OK(DecodePod(pod, &out));
  EXPECT_EQ(out.metadata.name, "chat-0");
  EXPECT_EQ(out.metadata.annotations.at("prometheus.io/port"), "18001");
  ASSERT_EQ(out.metadata.owner_references.size(), 2u);
  EXPECT_FALSE(out.metadata.owner_references[0].controller);
  const OwnerReference* controller = out.metadata.Controller();
  ASSERT_NE(controller, nullptr);
  EXPECT_EQ(controller->kind, "ModelDeployment");
  EXPECT_EQ(controller->api_version, "worker.gpustack.ai/v1alpha1");
  EXPECT_EQ(controller->name, "chat");
  EXPECT_EQ(controller->uid, "md-one");
  ASSERT_EQ(out.containers.size(), 1u);
  EXPECT_EQ(out.containers[0].name, "engine");
  EXPECT_EQ(out.containers[0].command, (std::vector<std::string>{"vllm", "serve"}));
  EXPECT_EQ(out.containers[0].args, (std::vector<std::string>{"--port", "18001"}));
  ASSERT_EQ(out.containers[0].ports.size(), 1u);
  EXPECT_EQ(out.containers[0].ports[0], (ContainerPort{18001, "http", "TCP"}));
  ASSERT_EQ(out.init_containers.size(), 1u);
  EXPECT_EQ(out.init_containers[0].ports[0].container_port, 9000);
  EXPECT_EQ(out.pod_ip, "10.0.0.7");
  EXPECT_EQ(out.phase, "Running");
}

TEST(ObjectsTest, PodWithoutControllerOrStatus) {
  Pod out;
  std::string error;
  ASSERT_OK(DecodePod(json::parse(R"({"metadata": {"name": "p"}, "spec": {}})"), &out));
  EXPECT_EQ(out.metadata.Controller(), nullptr);
  EXPECT_TRUE(out.pod_ip.empty());
  EXPECT_TRUE(out.containers.empty());
}

TEST(ObjectsTest, PodErrorsNameTheField) {
  EXPECT_EQ(DecodeError(&DecodePod, R"({"spec": {"containers": {}}})"),
            "spec.containers: expected an array");
  EXPECT_EQ(DecodeError(&DecodePod, R"({"spec": {"containers": [1]}})"),
            "spec.containers[0]: expected an object");
  EXPECT_EQ(DecodeError(&DecodePod,
                        R"({"spec": {"containers": [{"ports": [{"containerPort": "80"}]}]}})"),
            "spec.containers[0].ports[0].containerPort: expected an integer");
  EXPECT_EQ(DecodeError(&DecodePod, R"({"spec": {"initContainers": [{"args": [true]}]}})"),
            "spec.initContainers[0].args[0]: expected a string");
  EXPECT_EQ(DecodeError(&DecodePod, R"({"status": {"podIP": 10}})"),
            "status.podIP: expected a string");
  EXPECT_EQ(DecodeError(&DecodePod, R"({"status": "Running"})"), "status: expected an object");
  EXPECT_EQ(
      DecodeError(&DecodePod, R"({"metadata": {"annotations": {"prometheus.io/port": 18001}}})"),
      "metadata.annotations[\"prometheus.io/port\"]: expected a string");
  EXPECT_EQ(
      DecodeError(&DecodePod, R"({"metadata": {"ownerReferences": [{"controller": "yes"}]}})"),
      "metadata.ownerReferences[0].controller: expected a boolean");
  EXPECT_EQ(DecodeError(&DecodePod, R"({"metadata": {"ownerReferences": {}}})"),
            "metadata.ownerReferences: expected an array");
  EXPECT_EQ(DecodeError(&DecodePod, R"({"metadata": "x"})"), "metadata: expected an object");
}

TEST(ObjectsTest, DecodesReplicaSetAndDeploymentMetadata) {
  json rs = json::parse(R"({"kind": "ReplicaSet",
    "metadata": {"name": "chat-router-7c9f", "namespace": "team", "uid": "rs-router",
      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-router",
                           "uid": "dep-router", "controller": true}]},
    "spec": {"replicas": 1}})");
  ReplicaSet rs_out;
  std::string error;
  ASSERT_OK(DecodeReplicaSet(rs, &rs_out));
  EXPECT_EQ(rs_out.metadata.uid, "rs-router");
  ASSERT_NE(rs_out.metadata.Controller(), nullptr);
  EXPECT_EQ(rs_out.metadata.Controller()->name, "chat-router");

  Deployment dep_out;
  ASSERT_OK(DecodeDeployment(
      json::parse(R"({"metadata": {"name": "chat-router", "uid": "dep-router"}})"), &dep_out));
  EXPECT_EQ(dep_out.metadata.name, "chat-router");
  EXPECT_EQ(DecodeError(&DecodeReplicaSet, R"({"metadata": {"name": ["x"]}})"),
            "metadata.name: expected a string");
  EXPECT_EQ(DecodeError(&DecodeDeployment, R"("x")"), "expected an object");
}

ObjectMeta WithLabels(std::map<std::string, std::string> labels) {
  ObjectMeta meta;
  meta.labels = std::move(labels);
  return meta;
}

TEST(ObjectsTest, SelectorMatchesEqualityTerms) {
  ObjectMeta pod = WithLabels({{std::string(kLabelName), std::string(kLabelNameValue)},
                               {std::string(kLabelInstance), "chat"},
                               {"tier", "gpu"}});
  EXPECT_TRUE(MatchesSelector(pod, ""));
  EXPECT_TRUE(MatchesSelector(pod, "app.kubernetes.io/name=model-deployment"));
  EXPECT_TRUE(MatchesSelector(
      pod, "app.kubernetes.io/name=model-deployment,app.kubernetes.io/instance=chat"));
  EXPECT_TRUE(MatchesSelector(pod, "app.kubernetes.io/instance==chat"));
  EXPECT_TRUE(MatchesSelector(pod, " tier = gpu , app.kubernetes.io/instance == chat "));
  EXPECT_TRUE(MatchesSelector(pod, "tier=gpu,"));
  EXPECT_FALSE(MatchesSelector(pod, "app.kubernetes.io/instance=chat2"));
  EXPECT_FALSE(MatchesSelector(pod, "app.kubernetes.io/instance=cha"));
  EXPECT_FALSE(MatchesSelector(pod, "app.kubernetes.io/instance=Chat"));  // values are exact
  EXPECT_FALSE(MatchesSelector(pod, "tier=gpu,absent=x"));
  EXPECT_FALSE(MatchesSelector(pod, "absent="));  // an absent label is not an empty one
  EXPECT_FALSE(MatchesSelector(pod, "=gpu"));     // malformed: no key
}

TEST(ObjectsTest, SelectorAcceptsInequalityAndExistence) {
  ObjectMeta pod = WithLabels({{"tier", "gpu"}, {"empty", ""}});
  EXPECT_TRUE(MatchesSelector(pod, "tier!=cpu"));
  EXPECT_FALSE(MatchesSelector(pod, "tier!=gpu"));
  EXPECT_TRUE(MatchesSelector(pod, "absent!=x"));
  EXPECT_TRUE(MatchesSelector(pod, "tier"));
  EXPECT_TRUE(MatchesSelector(pod, "empty="));
  EXPECT_FALSE(MatchesSelector(pod, "absent"));
  EXPECT_TRUE(MatchesSelector(pod, "!absent"));
  EXPECT_FALSE(MatchesSelector(pod, "!tier"));
}

}  // namespace
}  // namespace modelmetrics::deployment
