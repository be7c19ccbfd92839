//! `fwk.Status`: a code, the reasons, and the plugin that returned it; and a cycle's statuses by
//! node (`NodeToStatus`).

use super::facts::Fact;
use crate::model::intern::Str;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, PartialOrd, Ord, Hash)]
pub enum Code {
    Success,
    Error,
    Unschedulable,
    UnschedulableAndUnresolvable,
    Wait,
    Skip,
    Pending,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Vec<String>,
    /// The upstream plugin name, set by the framework when a plugin returns the status.
    pub plugin: &'static str,
    /// What the plugin saw, behind the reasons (only when the cycle explains).
    pub facts: Vec<Fact>,
}

impl Status {
    pub fn success() -> Status {
        Status {
            code: Code::Success,
            reasons: Vec::new(),
            plugin: "",
            facts: Vec::new(),
        }
    }

    pub fn new(code: Code, reason: impl Into<String>) -> Status {
        Status {
            code,
            reasons: vec![reason.into()],
            plugin: "",
            facts: Vec::new(),
        }
    }

    pub fn with_reasons(code: Code, reasons: Vec<String>) -> Status {
        Status {
            code,
            reasons,
            plugin: "",
            facts: Vec::new(),
        }
    }

    pub fn skip() -> Status {
        Status {
            code: Code::Skip,
            reasons: Vec::new(),
            plugin: "",
            facts: Vec::new(),
        }
    }

    pub fn unschedulable(reason: impl Into<String>) -> Status {
        Status::new(Code::Unschedulable, reason)
    }

    pub fn unresolvable(reason: impl Into<String>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }

    pub fn error(message: impl Into<String>) -> Status {
        Status::new(Code::Error, message)
    }

    pub fn with_plugin(mut self, plugin: &'static str) -> Status {
        self.plugin = plugin;
        self
    }

    /// The status with the facts behind its reasons.
    pub fn with_facts(mut self, facts: Vec<Fact>) -> Status {
        self.facts = facts;
        self
    }

    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// Unschedulable or UnschedulableAndUnresolvable.
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable
        )
    }

    /// `Status.Message()`: the reasons joined by ", ".
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }
}

/// `NodeToStatus`: the status of every node that failed, plus the one of nodes never filtered.
#[derive(Clone, Debug)]
pub struct NodeToStatus {
    pub by_node: HashMap<Str, Status>,
    /// Status of nodes absent from `by_node`.
    pub absent: Status,
}

impl NodeToStatus {
    pub fn get(&self, node: Str) -> &Status {
        self.by_node.get(&node).unwrap_or(&self.absent)
    }
}
