//! Which Burn backend runs the model, and why.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;

use crate::EmbedError;

/// The backend a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The GPU when this build has the `wgpu` feature and a physical GPU adapter exists,
    /// otherwise the CPU. The reason for the choice is reported in [`BackendInfo::reason`].
    #[default]
    Auto,
    /// Burn's `flex` CPU backend.
    Cpu,
    /// Burn's WGPU backend on a physical GPU; an error where there is none.
    Gpu,
}

impl FromStr for BackendChoice {
    type Err = EmbedError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" | "wgpu" => Ok(Self::Gpu),
            other => Err(EmbedError::Backend {
                requested: other.into(),
                message: "unknown backend; use auto, cpu or gpu".into(),
            }),
        }
    }
}

/// The backend and device actually running the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// Burn's name for the backend: `flex` or `wgpu`.
    pub backend: &'static str,
    /// The device: the GPU's name, or the CPU and its thread count.
    pub device: String,
    /// Why this backend: asked for, or what [`BackendChoice::Auto`] found.
    pub reason: String,
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}: {}", self.backend, self.device, self.reason)
    }
}

/// Picks the device for `choice`.
pub fn select(choice: BackendChoice) -> Result<(Device, BackendInfo), EmbedError> {
    match choice {
        BackendChoice::Cpu => Ok(cpu("asked for".into())),
        BackendChoice::Gpu => gpu().map_err(|message| EmbedError::Backend {
            requested: "gpu".into(),
            message,
        }),
        BackendChoice::Auto => Ok(gpu().unwrap_or_else(cpu)),
    }
}

/// Whether `choice` runs the model on a GPU (without loading anything): `Auto` looks for a
/// physical adapter as [`select`] does.
pub fn picks_gpu(choice: BackendChoice) -> bool {
    match choice {
        BackendChoice::Cpu => false,
        BackendChoice::Gpu => true,
        BackendChoice::Auto => gpu().is_ok(),
    }
}

fn cpu(reason: String) -> (Device, BackendInfo) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let info = BackendInfo {
        backend: "flex",
        device: format!("CPU, {threads} threads"),
        reason,
    };
    (Device::flex(), info)
}

/// The physical GPU, looked for once a process: resolving the precision and loading the
/// model both ask, and enumerating adapters is not free.
#[cfg(feature = "wgpu")]
fn gpu() -> Result<(Device, BackendInfo), String> {
    static FOUND: std::sync::OnceLock<Result<(Device, BackendInfo), String>> =
        std::sync::OnceLock::new();
    FOUND.get_or_init(find_gpu).clone()
}

#[cfg(feature = "wgpu")]
fn find_gpu() -> Result<(Device, BackendInfo), String> {
    // Only a physical adapter: `Device::default()` would also take a software rasteriser
    // (Mesa's lavapipe), which is far slower than the CPU backend.
    let gpus = Device::enumerate_physical();
    let Some(gpu) = gpus.into_iter().next() else {
        return Err("no physical GPU adapter found".into());
    };
    let device = gpu
        .devices
        .first()
        .cloned()
        .ok_or_else(|| format!("GPU {} has no usable device", gpu.name))?;
    let info = BackendInfo {
        backend: "wgpu",
        device: gpu.name,
        reason: "a physical GPU adapter was found".into(),
    };
    Ok((device, info))
}

#[cfg(not(feature = "wgpu"))]
fn gpu() -> Result<(Device, BackendInfo), String> {
    Err("no GPU backend in this build (cargo feature `wgpu`)".into())
}
