// Command terraform-provider-loom is the Terraform/OpenTofu provider for Loom fabrics.
//
// It holds no fabric logic: every data source and resource runs the `loom` command line and
// reads its JSON interface (docs/terraform.md), so what Terraform plans is what `loom plan` plans.
package main

import (
	"context"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/loom-fabric/terraform-provider-loom/internal/loom"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	err := providerserver.Serve(context.Background(), loom.New(version), providerserver.ServeOpts{
		Address: "loom.local/loom/loom",
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
