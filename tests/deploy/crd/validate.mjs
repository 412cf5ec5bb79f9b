// Reads a JSON array of Kubernetes documents on stdin; prints one JSON array of
// {kind, name, error} (error null when valid) validated against the Prometheus Operator's
// CRD schemas, as compiled by @kubernetes-models/prometheus-operator.
import { readFileSync } from "node:fs";
import {
  PrometheusRule,
  ServiceMonitor,
} from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

const MODELS = { PrometheusRule, ServiceMonitor };
const docs = JSON.parse(readFileSync(0, "utf-8"));
const results = docs.map((doc) => {
  const Model = MODELS[doc.kind];
  if (!Model) return { kind: doc.kind, name: doc.metadata?.name, error: "no schema for this kind" };
  try {
    new Model(doc).validate();
    return { kind: doc.kind, name: doc.metadata?.name, error: null };
  } catch (e) {
    return { kind: doc.kind, name: doc.metadata?.name, error: String(e.message) };
  }
});
process.stdout.write(JSON.stringify(results));
