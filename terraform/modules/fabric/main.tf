# One fabric through Loom: the expanded model as data, its routing on a subnet manager, and
# (when a NetBox URL is given) its objects in NetBox.  Used by every root module terraform/<fabric>/.

terraform {
  required_providers {
    loom = { source = "loom.local/loom/loom" }
  }
}

variable "model" {
  type        = string
  description = "absolute path of the model file (YAML)"
}

variable "target" {
  type        = string
  description = "where loom_routing pushes: sim (the embedded simulated fabric), ssh (the inventory's subnet managers), or \"\" for no routing resource"
}

variable "inventory" {
  type    = string
  default = null
}

variable "ssh_config" {
  type    = string
  default = null
}

variable "netbox_url" {
  type        = string
  description = "NetBox to keep in sync (\"\" = none); the token comes only from NETBOX_TOKEN in the environment"
}

data "loom_fabric" "this" {
  model = var.model
}

# Routing is InfiniBand's (LFTs on a subnet manager); Ethernet planes have no loom_routing.
resource "loom_routing" "this" {
  count      = data.loom_fabric.this.technology == "infiniband" && var.target != "" ? 1 : 0
  model      = var.model
  target     = var.target
  inventory  = var.inventory
  ssh_config = var.ssh_config
}

resource "loom_netbox" "this" {
  count      = var.netbox_url != "" ? 1 : 0
  model      = var.model
  netbox_url = var.netbox_url
}

output "fabric" {
  value = {
    name       = data.loom_fabric.this.name
    technology = data.loom_fabric.this.technology
    switches   = length(data.loom_fabric.this.switches)
    nodes      = length(data.loom_fabric.this.nodes)
    cables     = length(data.loom_fabric.this.cables)
  }
}

output "routing" {
  value = [for r in loom_routing.this : r.applied_sha256]
}

output "netbox" {
  value = [for n in loom_netbox.this : n.applied_sha256]
}
