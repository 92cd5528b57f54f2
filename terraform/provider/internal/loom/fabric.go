package loom

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The records of `loom fabric MODEL --format json` (loom/render/fabric_values.py); one struct
// per record kind serves both the JSON decoding and the Terraform object type (nil = null).
type switchRec struct {
	Name      string  `json:"name" tfsdk:"name"`
	Role      string  `json:"role" tfsdk:"role"`
	Zone      string  `json:"zone" tfsdk:"zone"`
	Plane     int64   `json:"plane" tfsdk:"plane"`
	Model     string  `json:"model" tfsdk:"model"`
	Ports     int64   `json:"ports" tfsdk:"ports"`
	SpeedGbps int64   `json:"speed_gbps" tfsdk:"speed_gbps"`
	Rack      string  `json:"rack" tfsdk:"rack"`
	RU        int64   `json:"ru" tfsdk:"ru"`
	GUID      *string `json:"guid" tfsdk:"guid"`
	LID       *int64  `json:"lid" tfsdk:"lid"`
	ASN       *int64  `json:"asn" tfsdk:"asn"`
	Loopback  *string `json:"loopback" tfsdk:"loopback"`
}

type nodeRec struct {
	Name     string   `json:"name" tfsdk:"name"`
	Role     string   `json:"role" tfsdk:"role"`
	NodeType string   `json:"node_type" tfsdk:"node_type"`
	Rack     string   `json:"rack" tfsdk:"rack"`
	RU       int64    `json:"ru" tfsdk:"ru"`
	Zones    []string `json:"zones" tfsdk:"zones"`
}

type portRec struct {
	CA         string  `json:"ca" tfsdk:"ca"`
	Node       string  `json:"node" tfsdk:"node"`
	NIC        string  `json:"nic" tfsdk:"nic"`
	Port       int64   `json:"port" tfsdk:"port"`
	Plane      int64   `json:"plane" tfsdk:"plane"`
	Zone       string  `json:"zone" tfsdk:"zone"`
	SpeedGbps  int64   `json:"speed_gbps" tfsdk:"speed_gbps"`
	GUID       *string `json:"guid" tfsdk:"guid"`
	LID        *int64  `json:"lid" tfsdk:"lid"`
	Address    *string `json:"address" tfsdk:"address"`
	Switch     *string `json:"switch" tfsdk:"switch"`
	SwitchPort *int64  `json:"switch_port" tfsdk:"switch_port"`
}

type cableRec struct {
	ID         string   `json:"id" tfsdk:"id"`
	ADevice    string   `json:"a_device" tfsdk:"a_device"`
	APort      string   `json:"a_port" tfsdk:"a_port"`
	BDevice    string   `json:"b_device" tfsdk:"b_device"`
	BPort      string   `json:"b_port" tfsdk:"b_port"`
	Kind       string   `json:"kind" tfsdk:"kind"`
	Plane      int64    `json:"plane" tfsdk:"plane"`
	SpeedGbps  int64    `json:"speed_gbps" tfsdk:"speed_gbps"`
	Label      *string  `json:"label" tfsdk:"label"`
	Media      *string  `json:"media" tfsdk:"media"`
	LengthM    *float64 `json:"length_m" tfsdk:"length_m"`
	PartNumber *string  `json:"part_number" tfsdk:"part_number"`
}

type fabricValues struct {
	Name       string      `json:"name"`
	Technology string      `json:"technology"`
	Racks      []string    `json:"racks"`
	Switches   []switchRec `json:"switches"`
	Nodes      []nodeRec   `json:"nodes"`
	Ports      []portRec   `json:"ports"`
	Cables     []cableRec  `json:"cables"`
}

type fabricModel struct {
	Model      types.String `tfsdk:"model"`
	ID         types.String `tfsdk:"id"`
	Name       types.String `tfsdk:"name"`
	Technology types.String `tfsdk:"technology"`
	Racks      []string     `tfsdk:"racks"`
	Switches   []switchRec  `tfsdk:"switches"`
	Nodes      []nodeRec    `tfsdk:"nodes"`
	Ports      []portRec    `tfsdk:"ports"`
	Cables     []cableRec   `tfsdk:"cables"`
	JSON       types.String `tfsdk:"json"`
}

// ParseFabric reads the `fabric` member of a `loom fabric --format json` document.
func ParseFabric(out []byte) (fabricValues, string, error) {
	var doc struct {
		Fabric json.RawMessage `json:"fabric"`
	}
	var v fabricValues
	if err := json.Unmarshal(out, &doc); err != nil {
		return v, "", err
	}
	if len(doc.Fabric) == 0 {
		return v, "", fmt.Errorf("no `fabric` member in loom's answer")
	}
	err := json.Unmarshal(doc.Fabric, &v)
	return v, string(doc.Fabric), err
}

// NewFabricDataSource is the `loom_fabric` data source: the expanded model as Terraform values.
func NewFabricDataSource() datasource.DataSource { return &fabricDataSource{} }

type fabricDataSource struct{ run Runner }

func (d *fabricDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_fabric"
}

func computed(attrs map[string]attr.Type) map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	for name, t := range attrs {
		switch t {
		case types.StringType:
			out[name] = schema.StringAttribute{Computed: true}
		case types.Int64Type:
			out[name] = schema.Int64Attribute{Computed: true}
		case types.Float64Type:
			out[name] = schema.Float64Attribute{Computed: true}
		default:
			out[name] = schema.ListAttribute{Computed: true, ElementType: types.StringType}
		}
	}
	return out
}

func list(description string, attrs map[string]attr.Type) schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Computed: true, Description: description,
		NestedObject: schema.NestedAttributeObject{Attributes: computed(attrs)}}
}

var (
	str, num, real = types.StringType, types.Int64Type, types.Float64Type
	strs           = types.ListType{ElemType: types.StringType}
)

func (d *fabricDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The expanded Loom model (`loom fabric MODEL --format json`): racks, switches, nodes, NIC ports, cables.",
		Attributes: map[string]schema.Attribute{
			"model":      schema.StringAttribute{Required: true, Description: "the model file (YAML)"},
			"id":         schema.StringAttribute{Computed: true},
			"name":       schema.StringAttribute{Computed: true},
			"technology": schema.StringAttribute{Computed: true, Description: "infiniband or ethernet"},
			"racks":      schema.ListAttribute{Computed: true, ElementType: types.StringType},
			"switches": list("every switch", map[string]attr.Type{"name": str, "role": str, "zone": str, "plane": num,
				"model": str, "ports": num, "speed_gbps": num, "rack": str, "ru": num, "guid": str, "lid": num, "asn": num,
				"loopback": str}),
			"nodes": list("every node", map[string]attr.Type{"name": str, "role": str, "node_type": str, "rack": str,
				"ru": num, "zones": strs}),
			"ports": list("every NIC port, with the switch port it is cabled to", map[string]attr.Type{"ca": str,
				"node": str, "nic": str, "port": num, "plane": num, "zone": str, "speed_gbps": num, "guid": str, "lid": num,
				"address": str, "switch": str, "switch_port": num}),
			"cables": list("every cable; label, media, length_m and part_number when the model has `cabling:`",
				map[string]attr.Type{"id": str, "a_device": str, "a_port": str, "b_device": str, "b_port": str,
					"kind": str, "plane": num, "speed_gbps": num, "label": str, "media": str, "length_m": real,
					"part_number": str}),
			"json": schema.StringAttribute{Computed: true, Description: "the same records as one JSON string (jsondecode)"},
		},
	}
}

func (d *fabricDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	if r, ok := req.ProviderData.(Runner); ok {
		d.run = r
	}
}

func (d *fabricDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m fabricModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, _, diags := d.run.Run(ctx, path.Root("model"), "fabric", m.Model.ValueString(), "--format", "json")
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	v, raw, err := ParseFabric(out)
	if err != nil {
		resp.Diagnostics.AddError("cannot read loom's fabric document", err.Error())
		return
	}
	m.ID, m.Name, m.Technology, m.JSON = types.StringValue(v.Name), types.StringValue(v.Name),
		types.StringValue(v.Technology), types.StringValue(raw)
	m.Racks, m.Switches, m.Nodes, m.Ports, m.Cables = v.Racks, v.Switches, v.Nodes, v.Ports, v.Cables
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
