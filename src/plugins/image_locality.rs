//! ImageLocality (Score): favours nodes that already have the pod's images, scaled by how widely
//! each image is spread over the cluster.

use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::CycleState;
use crate::framework::facts::ScoreInput;
use crate::framework::plugin::{Cx, Plugin, Points, Reuse};
use crate::framework::status::Status;
use crate::model::intern::Str;
use crate::model::node_info::{ImageState, NodeInfo};

pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality {
    /// Image volumes' images count as the containers' do (1.36).
    pub counts_image_volumes: bool,
    /// ...and raise the threshold as containers do, so they cannot outweigh them (1.37).
    pub image_volumes_in_threshold: bool,
}

impl ImageLocality {
    fn volume_images<'a>(&self, cx: &Cx<'a>) -> &'a [Str] {
        if self.counts_image_volumes {
            cx.pod.volume_images.as_slice()
        } else {
            &[]
        }
    }

    /// The pod's images the node has, with their sizes and spread: the score sums them.
    fn found<'a>(
        &self,
        cx: &Cx<'a>,
        node: &'a NodeInfo,
    ) -> impl Iterator<Item = (&'a Str, &'a ImageState)> + 'a {
        cx.pod
            .images
            .iter()
            .chain(self.volume_images(cx))
            .filter_map(|img| node.image_states.get(img).map(|s| (img, s)))
    }
}

/// An image's size in proportion to the share of nodes that have it.
fn scaled_size(state: &ImageState, total_nodes: usize) -> i64 {
    let spread = state.num_nodes as f64 / total_nodes as f64;
    (state.size as f64 * spread) as i64
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::SCORE
    }

    fn score(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        let total_nodes = cx.snapshot.num_nodes();
        let sum: i64 = self
            .found(cx, node)
            .map(|(_, state)| scaled_size(state, total_nodes))
            .sum();
        let images = if self.image_volumes_in_threshold {
            cx.pod.num_containers + self.volume_images(cx).len()
        } else {
            cx.pod.num_containers
        };
        Ok(calculate_priority(sum, images))
    }

    fn score_inputs(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Vec<ScoreInput> {
        let total_nodes = cx.snapshot.num_nodes();
        self.found(cx, node)
            .map(|(&image, state)| ScoreInput::Image {
                image,
                size: state.size,
                nodes: state.num_nodes,
                total_nodes,
            })
            .collect()
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}

fn calculate_priority(sum: i64, num_containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * num_containers as i64;
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_volumes_count_from_1_36_and_in_the_threshold_from_1_37() {
        use crate::release::Release;
        use crate::testing::{cluster, explain_as, node, pod};
        use serde_json::json;
        let mut cached = node("cached", "4", json!({}));
        cached["status"]["images"] = json!([{"names": ["models/llm:v1"], "sizeBytes": 600 * MB}]);
        let c = cluster(vec![cached, node("empty", "4", json!({}))]);
        let mut p = pod("ns/p", None, "1", 0, json!({}));
        p["spec"]["volumes"] =
            json!([{"name": "weights", "image": {"reference": "models/llm:v1"}}]);
        let score = |release: &str| {
            let e = explain_as(Release::parse(release).unwrap(), c.clone(), p.clone());
            let n = e.nodes.iter().find(|n| n.name == "cached").unwrap();
            n.scores[super::NAME]
        };
        // The image is on one node of two: 300 MB count, against 1000 MB per image.
        assert_eq!(score("1.35"), 0);
        assert_eq!(score("1.36"), 28);
        assert_eq!(score("1.37"), 14);
    }

    #[test]
    fn thresholds() {
        assert_eq!(calculate_priority(0, 1), 0);
        assert_eq!(calculate_priority(1000 * MB, 1), 100);
        assert_eq!(calculate_priority(511 * MB + MB / 2, 1), 50);
    }
}
