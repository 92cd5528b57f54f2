package loom

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// SwitchTable is one switch's forwarding table as `loom tf routing` summarises it: enough for
// `terraform plan` to name the switches that change and show destinations moving between ports.
type SwitchTable struct {
	LID          int64            `json:"lid" tfsdk:"lid"`
	LFTDigest    string           `json:"lft_digest" tfsdk:"lft_digest"`
	Destinations int64            `json:"destinations" tfsdk:"destinations"`
	PerPort      map[string]int64 `json:"per_port" tfsdk:"per_port"`
}

// SwitchTables are the tables the model wants and the ones the target holds now.
type SwitchTables struct {
	Desired map[string]SwitchTable `json:"desired"`
	Live    map[string]SwitchTable `json:"live"`
}

// Sync is the part of a `loom tf <kind>` answer a resource keeps.
type Sync struct {
	Fabric        string        `json:"fabric"`
	DesiredSHA256 string        `json:"desired_sha256"`
	InSync        bool          `json:"in_sync"`
	Summary       string        `json:"summary"`
	Applied       bool          `json:"applied"`
	Result        string        `json:"result"`
	Switches      *SwitchTables `json:"switches"` // routing only
}

// ParseSync reads a `loom tf routing|netbox` document.
func ParseSync(out []byte) (Sync, error) {
	var s Sync
	if err := json.Unmarshal(out, &s); err != nil {
		return s, err
	}
	if s.DesiredSHA256 == "" {
		return s, fmt.Errorf("no desired_sha256 in loom's answer")
	}
	return s, nil
}

// OutOfSync is the state's `applied_sha256` when the target does not hold what the model wants:
// never equal to a desired digest, so the next plan shows an update (drift or a model change).
const OutOfSync = "out-of-sync"

// Observed is what Read records: the desired digest when the target holds it, else OutOfSync,
// with a summary saying so.  The plan (ModifyPlan) then sets the desired digest and Loom's plan
// summary; they differ exactly when `loom plan` has changes.
func Observed(s Sync) (applied, summary string) {
	if s.InSync {
		return s.DesiredSHA256, s.Summary
	}
	return OutOfSync, "the live state differs from the model"
}

// kind describes one resource over `loom tf <name>`: its own arguments and how they become flags.
type kind struct {
	name        string // routing | netbox
	description string
	attributes  map[string]schema.Attribute
	flags       func(ctx context.Context, get func(context.Context, path.Path, interface{}) error) ([]string, []string, error)
	// importAttrs are the string arguments an import ID may give after the model, comma-separated
	importAttrs []string
	// switches: the resource has the per-switch `switches` attribute (Read: live, plan: desired)
	switches bool
}

// syncResource is a resource whose Read is Loom's plan and whose Create/Update is Loom's apply.
type syncResource struct {
	kind kind
	run  Runner
}

func (r *syncResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.kind.name
}

func (r *syncResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"model": schema.StringAttribute{Required: true, Description: "the model file (YAML); an absolute path is best"},
		"id": schema.StringAttribute{Computed: true, Description: "the fabric's name",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"applied_sha256": schema.StringAttribute{Computed: true, Description: "digest of the intent the target holds " +
			"(`" + OutOfSync + "` when it differs: drift or a model change)"},
		"summary": schema.StringAttribute{Computed: true, Description: "Loom's plan summary"},
	}
	for k, v := range r.kind.attributes {
		attrs[k] = v
	}
	if r.kind.switches {
		attrs["switches"] = schema.MapNestedAttribute{Computed: true,
			Description: "per switch (by name): `lid`, `lft_digest` (of its forwarding table), `destinations` routed, " +
				"`per_port` (destinations leaving by each port, keyed \"PORT PEER\"); the state holds what the " +
				"switch has, the plan what the model wants, so a plan shows which switches change and how",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"lid":          schema.Int64Attribute{Computed: true},
				"lft_digest":   schema.StringAttribute{Computed: true},
				"destinations": schema.Int64Attribute{Computed: true},
				"per_port":     schema.MapAttribute{Computed: true, ElementType: types.Int64Type},
			}}}
	}
	resp.Schema = schema.Schema{Description: r.kind.description, Attributes: attrs}
}

func (r *syncResource) Configure(_ context.Context, req resource.ConfigureRequest, _ *resource.ConfigureResponse) {
	if run, ok := req.ProviderData.(Runner); ok {
		r.run = run
	}
}

// call runs `loom tf <kind> MODEL <flags> [extra...]` with the arguments found in `src`.
func (r *syncResource) call(ctx context.Context, src interface {
	GetAttribute(context.Context, path.Path, interface{}) diagsT
}, extra ...string) (Sync, int, diagsT) {
	var diags diagsT
	var model types.String
	diags.Append(src.GetAttribute(ctx, path.Root("model"), &model)...)
	if diags.HasError() {
		return Sync{}, 1, diags
	}
	flags, env, err := r.kind.flags(ctx, func(ctx context.Context, p path.Path, v interface{}) error {
		if d := src.GetAttribute(ctx, p, v); d.HasError() {
			return fmt.Errorf("%s", d[0].Detail())
		}
		return nil
	})
	if err != nil {
		diags.AddError("bad arguments", err.Error())
		return Sync{}, 1, diags
	}
	run := r.run
	run.Env = append(append([]string{}, run.Env...), env...)
	args := append(append([]string{"tf", r.kind.name, model.ValueString()}, flags...), extra...)
	out, code, d := run.Run(ctx, path.Root("model"), args...)
	diags.Append(d...)
	if diags.HasError() {
		return Sync{}, code, diags
	}
	s, err := ParseSync(out)
	if err != nil {
		diags.AddError("cannot read loom's answer", err.Error())
	}
	return s, code, diags
}

func (r *syncResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	s, _, diags := r.call(ctx, req.State)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	applied, summary := Observed(s)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), s.Fabric)...) // set here for an import
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("applied_sha256"), applied)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("summary"), summary)...)
	if r.kind.switches {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("switches"), s.tables(false))...)
	}
}

// tables is the `switches` value: the live tables (Read) or the desired ones (plan).
func (s Sync) tables(desired bool) map[string]SwitchTable {
	out := map[string]SwitchTable{}
	if s.Switches != nil {
		from := s.Switches.Live
		if desired {
			from = s.Switches.Desired
		}
		for k, v := range from {
			out[k] = v
		}
	}
	return out
}

// ImportID splits an import ID, `MODEL[,ARG...]` (the kind's importAttrs in order, empty = unset),
// and makes the model path absolute (relative to the root module's directory, where tofu runs).
func ImportID(id string, attrs []string) (string, map[string]string, error) {
	parts := strings.Split(id, ",")
	usage := "MODEL"
	for _, a := range attrs {
		usage += "[," + a
	}
	usage += strings.Repeat("]", len(attrs))
	if strings.TrimSpace(parts[0]) == "" || len(parts) > 1+len(attrs) {
		return "", nil, fmt.Errorf("the import ID %q is not %s (e.g. /srv/fabric/topology/tiny.yaml,sim)", id, usage)
	}
	model, err := filepath.Abs(strings.TrimSpace(parts[0]))
	if err != nil {
		return "", nil, err
	}
	set := map[string]string{}
	for i, v := range parts[1:] {
		if v = strings.TrimSpace(v); v != "" {
			set[attrs[i]] = v
		}
	}
	return model, set, nil
}

// ImportState adopts what a fabric (or NetBox) holds already: the ID names the model and the
// arguments; Read then records what the target holds, and the next plan shows any difference.
func (r *syncResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	model, set, err := ImportID(req.ID, r.kind.importAttrs)
	if err != nil {
		resp.Diagnostics.AddError("bad import ID", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("model"), model)...)
	for k, v := range set {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(k), v)...)
	}
}

// ModifyPlan asks Loom what it would change, so `terraform plan` shows Loom's plan summary and
// an update exactly when `loom plan` has changes (and a bad model fails the plan).
func (r *syncResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	s, _, diags := r.call(ctx, req.Plan)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("id"), s.Fabric)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("applied_sha256"), s.DesiredSHA256)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("summary"), s.Summary)...)
	if r.kind.switches {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("switches"), s.tables(true))...)
	}
}

func (r *syncResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	resp.Diagnostics.Append(r.apply(ctx, req.Plan, &resp.State)...)
}

func (r *syncResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.Append(r.apply(ctx, req.Plan, &resp.State)...)
}

// apply runs Loom's verified apply, refusing (`--expect`) if the intent moved since the plan.
func (r *syncResource) apply(ctx context.Context, plan tfsdk.Plan, state *tfsdk.State) diagsT {
	var planned types.String
	diags := plan.GetAttribute(ctx, path.Root("applied_sha256"), &planned)
	if diags.HasError() {
		return diags
	}
	extra := []string{"--apply"}
	if !planned.IsUnknown() && !planned.IsNull() {
		extra = append(extra, "--expect", planned.ValueString())
	}
	_, _, d := r.call(ctx, plan, extra...)
	diags.Append(d...)
	if diags.HasError() {
		return diags
	}
	state.Raw = plan.Raw // the planned values (digest, summary) are now what the target holds
	return diags
}

// Delete forgets the resource: a fabric's tables (or NetBox's objects) are not torn down by Terraform.
func (r *syncResource) Delete(_ context.Context, _ resource.DeleteRequest, resp *resource.DeleteResponse) {
	resp.Diagnostics.AddWarning("loom: removed from the state only",
		fmt.Sprintf("Terraform no longer manages this %s; what Loom applied stays in place.", r.kind.name))
}

var (
	_ resource.ResourceWithImportState = (*syncResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*syncResource)(nil)
)
