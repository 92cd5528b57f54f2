// Package loom implements the provider's data source and resources over Loom's JSON interface.
package loom

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// New returns the provider factory providerserver.Serve wants.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &loomProvider{version: version} }
}

type loomProvider struct{ version string }

type providerModel struct {
	Command  types.String `tfsdk:"command"`
	StateDir types.String `tfsdk:"state_dir"`
}

func (p *loomProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "loom"
	resp.Version = p.version
}

func (p *loomProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Loom: declarative AI-cluster fabrics. Every call runs the loom command line (its JSON interface).",
		Attributes: map[string]schema.Attribute{
			"command": schema.StringAttribute{Optional: true,
				Description: "the loom executable (default: $LOOM_BIN, else `loom` on PATH)"},
			"state_dir": schema.StringAttribute{Optional: true,
				Description: "LOOM_STATE_DIR for the simulated fabric's state (default: loom's, or the environment's)"},
		},
	}
}

func (p *loomProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r := Runner{Command: FromEnv()}
	if !m.Command.IsNull() && m.Command.ValueString() != "" {
		r.Command = m.Command.ValueString()
	}
	if !m.StateDir.IsNull() {
		r.StateDir = m.StateDir.ValueString()
	}
	resp.DataSourceData = r
	resp.ResourceData = r
}

func (p *loomProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewFabricDataSource}
}

func (p *loomProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewRoutingResource, NewNetBoxResource}
}
