//! The JSON of `k8s.io/kube-scheduler/extender/v1`. Its structs have no json tags, so keys are
//! the Go field names; Go decodes them case-insensitively (the last matching key wins) and leaves
//! absent or null fields at zero, and so does this decoder. Decoding errors read as Go's where the
//! cause is the same (`EOF`, `invalid character …`, `json: cannot unmarshal …`).

use crate::framework::extender::{FilterResult, HostPriority, MetaVictims, VictimsOnNode};
use crate::model::api_object::ApiObject;
use crate::model::intern::Interner;
use crate::model::node::Node;
use crate::model::node_info::NodeInfo;
use crate::model::parse::Parse;
use crate::model::pod::Pod;
use k8s_openapi::api::core::v1 as k8s;
use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// `v1.NodeList` as Go writes one built in code: no TypeMeta, an empty ListMeta.
#[derive(Serialize)]
struct NodeList<'a> {
    metadata: Empty,
    items: Vec<&'a RawValue>,
}

#[derive(Serialize)]
struct Empty {}

/// `ExtenderArgs`.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ExtenderArgs<'a> {
    pod: &'a RawValue,
    nodes: Option<NodeList<'a>>,
    node_names: Option<Vec<&'a str>>,
}

/// `Victims` and `MetaVictims`: the victims as whole Pods or as UIDs.
#[derive(Serialize)]
struct Victims<P> {
    #[serde(rename = "Pods")]
    pods: Vec<P>,
    #[serde(rename = "NumPDBViolations")]
    num_pdb_violations: i64,
}

#[derive(Serialize)]
struct MetaPod<'a> {
    #[serde(rename = "UID")]
    uid: &'a str,
}

/// `ExtenderPreemptionArgs`.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ExtenderPreemptionArgs<'a> {
    pod: &'a RawValue,
    node_name_to_victims: Option<BTreeMap<&'a str, Victims<&'a RawValue>>>,
    node_name_to_meta_victims: Option<BTreeMap<&'a str, Victims<MetaPod<'a>>>>,
}

fn object_of<'a>(
    kind: &str,
    name: &str,
    object: &'a Option<ApiObject>,
) -> Result<&'a RawValue, String> {
    object.as_deref().ok_or_else(|| {
        format!("the API object of {kind} {name} was not kept, so it cannot be sent to extenders")
    })
}

fn pod_object(pod: &Pod) -> Result<&RawValue, String> {
    object_of("pod", &pod.key(), &pod.api_object)
}

fn to_body<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    serde_json::to_vec(value).map_err(|e| e.to_string())
}

/// The body of a filter or prioritize request: node names to a `nodeCacheCapable` extender,
/// whole Node objects to any other.
pub fn extender_args(pod: &Pod, nodes: &[&NodeInfo], by_name: bool) -> Result<Vec<u8>, String> {
    let (node_list, node_names) = if by_name {
        (
            None,
            Some(nodes.iter().map(|n| n.name().as_str()).collect()),
        )
    } else {
        let items = nodes
            .iter()
            .map(|n| object_of("node", n.name().as_str(), &n.node.api_object))
            .collect::<Result<_, _>>()?;
        (
            Some(NodeList {
                metadata: Empty {},
                items,
            }),
            None,
        )
    };
    to_body(&ExtenderArgs {
        pod: pod_object(pod)?,
        nodes: node_list,
        node_names,
    })
}

/// The body of a preempt request: victims by UID to a `nodeCacheCapable` extender, whole Pods to
/// any other.
pub fn preemption_args(
    pod: &Pod,
    candidates: &[VictimsOnNode],
    by_uid: bool,
) -> Result<Vec<u8>, String> {
    let mut args = ExtenderPreemptionArgs {
        pod: pod_object(pod)?,
        node_name_to_victims: None,
        node_name_to_meta_victims: None,
    };
    if by_uid {
        args.node_name_to_meta_victims = Some(
            candidates
                .iter()
                .map(|c| {
                    let pods = c
                        .pods
                        .iter()
                        .map(|v| MetaPod {
                            uid: v.pod.uid.as_str(),
                        })
                        .collect();
                    (c.node.as_str(), victims(pods, c))
                })
                .collect(),
        );
    } else {
        let mut map = BTreeMap::new();
        for c in candidates {
            let pods = c
                .pods
                .iter()
                .map(|v| pod_object(&v.pod))
                .collect::<Result<_, _>>()?;
            map.insert(c.node.as_str(), victims(pods, c));
        }
        args.node_name_to_victims = Some(map);
    }
    to_body(&args)
}

fn victims<P>(pods: Vec<P>, c: &VictimsOnNode) -> Victims<P> {
    Victims {
        pods,
        num_pdb_violations: c.num_pdb_violations,
    }
}

/// A JSON object's members in document order, values undecoded.
struct Object(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Object, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    members.push(entry);
                }
                Ok(Object(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// What Go calls a JSON value's kind in `json: cannot unmarshal <kind> into …`.
fn kind(raw: &RawValue) -> &'static str {
    match raw.get().trim_start().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        _ => "number",
    }
}

/// The type a Go value of `go_type` must be, the way its JSON starts.
fn fits(raw: &RawValue, go_type: &str) -> bool {
    let k = kind(raw);
    match go_type.trim_start_matches('*') {
        t if t.starts_with("[]") => k == "array",
        t if t.starts_with("map[") || t.starts_with("v1.") => k == "object",
        "string" => k == "string",
        _ => k == "number",
    }
}

/// A struct being decoded: Go's struct name for its messages, and its members.
struct Struct {
    go_name: &'static str,
    members: Object,
}

impl Struct {
    fn parse(raw: &RawValue, go_name: &'static str) -> Result<Option<Struct>, String> {
        if raw.get() == "null" {
            return Ok(None);
        }
        if kind(raw) != "object" {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type v1.{go_name}",
                kind(raw)
            ));
        }
        let members = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        Ok(Some(Struct { go_name, members }))
    }

    /// The member for `field`, decoded; `None` when absent or null.
    fn field<T: DeserializeOwned>(&self, field: &str, go_type: &str) -> Result<Option<T>, String> {
        let Some((_, raw)) = self
            .members
            .0
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(field))
        else {
            return Ok(None);
        };
        if raw.get() == "null" {
            return Ok(None);
        }
        let at = format!("Go struct field {}.{field} of type {go_type}", self.go_name);
        if !fits(raw, go_type) {
            return Err(format!("json: cannot unmarshal {} into {at}", kind(raw)));
        }
        serde_json::from_str(raw.get())
            .map_err(|e| format!("json: cannot unmarshal into {at}: {e}"))
    }
}

/// The first JSON value of a body, as `json.Decoder.Decode` reads it: what follows is ignored.
fn first_value(body: &[u8]) -> Result<Box<RawValue>, String> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let Some(start) = start else {
        return Err("EOF".into());
    };
    let mut values =
        serde_json::Deserializer::from_slice(&body[start..]).into_iter::<Box<RawValue>>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) if e.is_eof() => Err("unexpected EOF".into()),
        Some(Err(e)) if e.column() <= 1 && e.line() == 1 => Err(format!(
            "invalid character {:?} looking for beginning of value",
            char::from(body[start])
        )),
        Some(Err(e)) => Err(format!("invalid JSON: {e}")),
        None => Err("EOF".into()),
    }
}

/// An `ExtenderFilterResult`; Node objects are parsed into nodes that keep their object.
pub fn filter_result(body: &[u8]) -> Result<FilterResult, String> {
    let raw = first_value(body)?;
    let Some(s) = Struct::parse(&raw, "ExtenderFilterResult")? else {
        return Ok(FilterResult::default());
    };
    let nodes = match s.field::<Box<RawValue>>("Nodes", "*v1.NodeList")? {
        None => None,
        Some(list) => Some(returned_nodes(&list)?),
    };
    Ok(FilterResult {
        nodes,
        node_names: s.field("NodeNames", "*[]string")?,
        failed_nodes: s
            .field("FailedNodes", "v1.FailedNodesMap")?
            .unwrap_or_default(),
        failed_and_unresolvable_nodes: s
            .field("FailedAndUnresolvableNodes", "v1.FailedNodesMap")?
            .unwrap_or_default(),
        error: s.field("Error", "string")?.unwrap_or_default(),
    })
}

#[derive(Deserialize)]
struct NodeListIn {
    items: Option<Vec<Box<RawValue>>>,
}

/// The items of a returned `v1.NodeList`, each parsed as a node keeping the object as received.
fn returned_nodes(list: &RawValue) -> Result<Vec<Arc<Node>>, String> {
    let list: NodeListIn = serde_json::from_str(list.get())
        .map_err(|e| format!("json: cannot unmarshal into Go struct field ExtenderFilterResult.Nodes of type v1.NodeList: {e}"))?;
    let strings = Interner::new();
    list.items
        .unwrap_or_default()
        .into_iter()
        .map(|item| {
            let object: k8s::Node = serde_json::from_str(item.get())
                .map_err(|e| format!("a returned Node does not decode: {e}"))?;
            // Kept as received below, not re-serialised.
            let parse = Parse {
                strings: &strings,
                keep_api_objects: false,
            };
            let mut node =
                Node::from_k8s(&object, &parse).map_err(|e| format!("a returned {e}"))?;
            node.api_object = Some(Arc::from(item));
            Ok(Arc::new(node))
        })
        .collect()
}

/// A `HostPriorityList`.
pub fn host_priority_list(body: &[u8]) -> Result<Vec<HostPriority>, String> {
    let raw = first_value(body)?;
    if raw.get() == "null" {
        return Ok(Vec::new());
    }
    if kind(&raw) != "array" {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type v1.HostPriorityList",
            kind(&raw)
        ));
    }
    let items: Vec<Box<RawValue>> = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    items
        .iter()
        .map(|item| {
            let s = Struct::parse(item, "HostPriority")?;
            let Some(s) = s else {
                return Ok(HostPriority {
                    host: String::new(),
                    score: 0,
                });
            };
            Ok(HostPriority {
                host: s.field("Host", "string")?.unwrap_or_default(),
                score: s.field("Score", "int64")?.unwrap_or_default(),
            })
        })
        .collect()
}

/// An `ExtenderPreemptionResult`: `NodeNameToMetaVictims`.
pub fn preemption_result(body: &[u8]) -> Result<BTreeMap<String, Option<MetaVictims>>, String> {
    let raw = first_value(body)?;
    let Some(s) = Struct::parse(&raw, "ExtenderPreemptionResult")? else {
        return Ok(BTreeMap::new());
    };
    let by_node: BTreeMap<String, Box<RawValue>> = s
        .field("NodeNameToMetaVictims", "map[string]*v1.MetaVictims")?
        .unwrap_or_default();
    by_node
        .into_iter()
        .map(|(node, raw)| {
            let Some(v) = Struct::parse(&raw, "MetaVictims")? else {
                return Ok((node, None));
            };
            let pods: Vec<Box<RawValue>> = v.field("Pods", "[]*v1.MetaPod")?.unwrap_or_default();
            let uids = pods
                .iter()
                .map(|p| {
                    Ok(Struct::parse(p, "MetaPod")?
                        .map(|p| p.field("UID", "string"))
                        .transpose()?
                        .flatten()
                        .unwrap_or_default())
                })
                .collect::<Result<_, String>>()?;
            let meta = MetaVictims {
                pods: uids,
                num_pdb_violations: v.field("NumPDBViolations", "int64")?.unwrap_or_default(),
            };
            Ok((node, Some(meta)))
        })
        .collect()
}
