package loom

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

type diagsT = diag.Diagnostics

type getter = func(context.Context, path.Path, interface{}) error

// optional adds `--flag VALUE` when the string attribute is set.
func optional(ctx context.Context, get getter, attr, flag string, flags []string) ([]string, error) {
	var v types.String
	if err := get(ctx, path.Root(attr), &v); err != nil {
		return nil, err
	}
	if v.IsNull() || v.IsUnknown() || v.ValueString() == "" {
		return flags, nil
	}
	return append(flags, flag, v.ValueString()), nil
}

// NewRoutingResource is `loom_routing`: one per fabric and target. Read = `loom plan` (live
// read-back: drift shows in `terraform plan`), Create/Update = `loom apply` (verified).
func NewRoutingResource() resource.Resource {
	return &syncResource{kind: kind{
		name: "routing",
		description: "A fabric's routing (LFTs) and QoS on its subnet manager: Read reads the live tables back " +
			"through the target, Create/Update run Loom's verified apply (`loom tf routing`).",
		attributes: map[string]schema.Attribute{
			"target":     schema.StringAttribute{Optional: true, Description: "sim (default) or ssh"},
			"inventory":  schema.StringAttribute{Optional: true, Description: "with target ssh: the inventory directory"},
			"ssh_config": schema.StringAttribute{Optional: true, Description: "with target ssh: an ssh_config file"},
		},
		flags: func(ctx context.Context, get getter) ([]string, []string, error) {
			flags, err := optional(ctx, get, "target", "--target", nil)
			if err == nil {
				flags, err = optional(ctx, get, "inventory", "--inventory", flags)
			}
			if err == nil {
				flags, err = optional(ctx, get, "ssh_config", "--ssh-config", flags)
			}
			return flags, nil, err
		},
		importAttrs: []string{"target", "inventory", "ssh_config"},
		switches:    true,
	}}
}

// NewNetBoxResource is `loom_netbox`: the fabric's objects in NetBox (`loom tf netbox`).
// The token comes only from NETBOX_TOKEN in the environment, never from the configuration.
func NewNetBoxResource() resource.Resource {
	return &syncResource{kind: kind{
		name: "netbox",
		description: "The fabric in NetBox (sites, racks, devices, interfaces, cables, IPAM) as `loom netbox " +
			"plan|apply` keeps it. NETBOX_TOKEN comes from the environment only.",
		attributes: map[string]schema.Attribute{
			"netbox_url": schema.StringAttribute{Optional: true, Description: "NetBox's URL (default: $NETBOX_URL)"},
			"installed": schema.BoolAttribute{Optional: true,
				Description: "the fabric is on the floor already: new cables are `connected`, not `planned`"},
		},
		flags: func(ctx context.Context, get getter) ([]string, []string, error) {
			var url types.String
			var installed types.Bool
			if err := get(ctx, path.Root("netbox_url"), &url); err != nil {
				return nil, nil, err
			}
			if err := get(ctx, path.Root("installed"), &installed); err != nil {
				return nil, nil, err
			}
			var flags, env []string
			if installed.ValueBool() {
				flags = append(flags, "--installed")
			}
			if !url.IsNull() && !url.IsUnknown() && url.ValueString() != "" {
				env = append(env, "NETBOX_URL="+url.ValueString())
			}
			return flags, env, nil
		},
		importAttrs: []string{"netbox_url"},
	}}
}
