# The root module of one reference fabric: terraform/<fabric>/ links this file as main.tf and
# names its own state in backend.tf.  The model is topology/<directory name>.yaml.

terraform {
  required_providers {
    loom = { source = "loom.local/loom/loom" }
  }
}

variable "target" {
  type        = string
  default     = "sim"
  description = "sim, ssh, or \"\" (no routing resource)"
}

variable "inventory" {
  type        = string
  default     = null
  description = "with target ssh: the inventory directory (default inventory/<fabric>)"
}

variable "ssh_config" {
  type    = string
  default = null
}

variable "netbox_url" {
  type        = string
  default     = ""
  description = "NetBox to keep in sync (\"\" = none); NETBOX_TOKEN comes from the environment only"
}

provider "loom" {}

module "fabric" {
  source     = "../modules/fabric"
  model      = abspath("${path.module}/../../topology/${basename(abspath(path.module))}.yaml")
  target     = var.target
  inventory  = var.inventory
  ssh_config = var.ssh_config
  netbox_url = var.netbox_url
}

output "fabric" {
  value = module.fabric.fabric
}

output "routing" {
  value = module.fabric.routing
}

output "netbox" {
  value = module.fabric.netbox
}
