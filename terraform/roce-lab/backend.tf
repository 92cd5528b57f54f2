# State of roce-lab in PostgreSQL (PG_CONN_STR from the environment; `make tf-init` sets it), with
# locking.  For a local state file instead, see docs/terraform.md ("local backend").
terraform {
  backend "pg" {
    schema_name = "loom_roce_lab"
  }
}
