package loom

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// fakeLoom writes an executable that prints `stdout`, `stderr` and exits with `code`, and
// records its arguments and environment, standing in for the loom command line.
func fakeLoom(t *testing.T, stdout, stderr string, code int) (Runner, string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"out": stdout, "err": stderr} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho \"$@\" > " + dir + "/args\nenv > " + dir + "/env\ncat " + dir + "/out\ncat " + dir +
		"/err >&2\nexit " + string(rune('0'+code)) + "\n"
	bin := filepath.Join(dir, "loom")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Runner{Command: bin}, dir
}

func read(t *testing.T, dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const inSync = `{"interface": 1, "kind": "routing", "fabric": "tiny", "desired_sha256": "abc", "in_sync": true,
 "summary": "no changes: the live tables match the model", "applied": false}`

func TestRunPassesArgumentsStateDirAndEnv(t *testing.T) {
	r, dir := fakeLoom(t, inSync, "", 0)
	r.StateDir, r.Env = "/tmp/state", []string{"NETBOX_URL=http://127.0.0.1:1"}
	out, code, diags := r.Run(context.Background(), path.Root("model"), "tf", "routing", "m.yaml")
	if diags.HasError() || code != 0 {
		t.Fatalf("code %d, diags %v", code, diags)
	}
	if got := strings.TrimSpace(read(t, dir, "args")); got != "tf routing m.yaml" {
		t.Errorf("args %q", got)
	}
	env := read(t, dir, "env")
	if !strings.Contains(env, "LOOM_STATE_DIR=/tmp/state") || !strings.Contains(env, "NETBOX_URL=http://127.0.0.1:1") {
		t.Errorf("environment lacks LOOM_STATE_DIR / NETBOX_URL:\n%s", env)
	}
	s, err := ParseSync(out)
	if err != nil || s.DesiredSHA256 != "abc" || !s.InSync || s.Fabric != "tiny" {
		t.Errorf("ParseSync: %+v %v", s, err)
	}
}

func TestChangesPendingIsNotAnError(t *testing.T) {
	r, _ := fakeLoom(t, strings.Replace(inSync, `"in_sync": true`, `"in_sync": false`, 1), "", 2)
	out, code, diags := r.Run(context.Background(), path.Root("model"), "tf", "routing", "m.yaml")
	if diags.HasError() || code != 2 {
		t.Fatalf("code %d, diags %v", code, diags)
	}
	s, _ := ParseSync(out)
	if applied, summary := Observed(s); applied != OutOfSync || summary == s.Summary {
		t.Errorf("out of sync observed as %q / %q", applied, summary)
	}
}

func TestModelErrorsBecomeDiagnosticsWithFileLineAndField(t *testing.T) {
	r, _ := fakeLoom(t, `{"interface": 1, "errors": [{"file": "/m/bad.yaml", "line": 10, "path": "switch_models.SW8.ports",
	 "message": "Input should be greater than or equal to 1", "fix": "use a larger value"}]}`, "", 1)
	_, _, diags := r.Run(context.Background(), path.Root("model"), "tf", "routing", "/m/bad.yaml")
	if diags.ErrorsCount() != 1 {
		t.Fatalf("want one error, got %v", diags)
	}
	d := diags.Errors()[0]
	for _, want := range []string{"/m/bad.yaml:10", "switch_models.SW8.ports", "fix: use a larger value"} {
		if !strings.Contains(d.Detail(), want) {
			t.Errorf("diagnostic %q lacks %q", d.Detail(), want)
		}
	}
}

func TestStderrIsTheDiagnosticWhenLoomGivesNoDocument(t *testing.T) {
	r, _ := fakeLoom(t, "", "error: NETBOX_URL is not set", 1)
	_, _, diags := r.Run(context.Background(), path.Root("model"), "tf", "netbox", "m.yaml")
	if !diags.HasError() || !strings.Contains(diags.Errors()[0].Detail(), "NETBOX_URL is not set") {
		t.Fatalf("stderr not passed on: %v", diags)
	}
}

func TestWrongInterfaceVersionIsRefused(t *testing.T) {
	r, _ := fakeLoom(t, strings.Replace(inSync, `"interface": 1`, `"interface": 9`, 1), "", 0)
	if _, _, diags := r.Run(context.Background(), path.Root("model"), "tf", "routing", "m.yaml"); !diags.HasError() {
		t.Fatal("a document of another interface version was accepted")
	}
}

func TestMissingExecutableIsADiagnostic(t *testing.T) {
	r := Runner{Command: filepath.Join(t.TempDir(), "no-such-loom")}
	_, _, diags := r.Run(context.Background(), path.Root("model"), "fabric", "m.yaml")
	if !diags.HasError() || !strings.Contains(diags.Errors()[0].Detail(), "LOOM_BIN") {
		t.Fatalf("want a diagnostic naming LOOM_BIN, got %v", diags)
	}
}

func TestParseFabric(t *testing.T) {
	v, raw, err := ParseFabric([]byte(`{"interface": 1, "fabric": {"name": "tiny", "technology": "infiniband",
	 "racks": ["A01"], "switches": [{"name": "z0-leaf0", "guid": "0x0002c90200000001", "lid": 1024, "asn": null}],
	 "nodes": [], "ports": [], "cables": [{"id": "z0-leaf0/5", "length_m": 3.0, "label": null}]}}`))
	if err != nil || v.Name != "tiny" || len(v.Switches) != 1 || *v.Switches[0].LID != 1024 || v.Switches[0].ASN != nil {
		t.Fatalf("%+v %v", v, err)
	}
	if *v.Cables[0].LengthM != 3.0 || v.Cables[0].Label != nil || !strings.Contains(raw, "z0-leaf0") {
		t.Errorf("cables %+v", v.Cables[0])
	}
	if _, _, err := ParseFabric([]byte(`{"interface": 1}`)); err == nil {
		t.Error("a document without `fabric` was accepted")
	}
}

func TestSchemasAreValid(t *testing.T) {
	ctx := context.Background()
	p := New("test")()
	for _, f := range p.Resources(ctx) {
		var resp resource.SchemaResponse
		f().Schema(ctx, resource.SchemaRequest{}, &resp)
		if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
			t.Errorf("resource schema: %v", diags)
		}
		if _, ok := resp.Schema.Attributes["applied_sha256"]; !ok {
			t.Error("a resource lacks applied_sha256")
		}
	}
	for _, f := range p.DataSources(ctx) {
		var resp datasource.SchemaResponse
		f().Schema(ctx, datasource.SchemaRequest{}, &resp)
		if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
			t.Errorf("data source schema: %v", diags)
		}
	}
}

func TestImportIDNamesTheModelAndTheArgumentsInOrder(t *testing.T) {
	model, set, err := ImportID("/srv/f/tiny.yaml,ssh,,/srv/ssh_config", []string{"target", "inventory", "ssh_config"})
	if err != nil || model != "/srv/f/tiny.yaml" || set["target"] != "ssh" || set["ssh_config"] != "/srv/ssh_config" {
		t.Fatalf("%q %v %v", model, set, err)
	}
	if _, ok := set["inventory"]; ok {
		t.Error("an empty field set the inventory")
	}
	if model, _, _ := ImportID("topology/tiny.yaml", nil); !filepath.IsAbs(model) {
		t.Errorf("a relative model path stayed relative: %q", model)
	}
	for _, bad := range []string{"", ",sim", "/m.yaml,sim,inv,cfg,extra"} {
		if _, _, err := ImportID(bad, []string{"target", "inventory", "ssh_config"}); err == nil ||
			!strings.Contains(err.Error(), "MODEL[,target[,inventory[,ssh_config]]]") {
			t.Errorf("import ID %q: %v", bad, err)
		}
	}
}

func TestSwitchTablesAreLiveInTheStateAndDesiredInThePlan(t *testing.T) {
	s, err := ParseSync([]byte(`{"interface": 1, "fabric": "tiny", "desired_sha256": "abc", "switches": {
	 "desired": {"z0-leaf0": {"lid": 1024, "lft_digest": "d1", "destinations": 39, "per_port": {"5 z0-spine0": 9}}},
	 "live": {"z0-leaf0": {"lid": 1024, "lft_digest": "l1", "destinations": 39, "per_port": {"5 z0-spine0": 8}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d, l := s.tables(true)["z0-leaf0"], s.tables(false)["z0-leaf0"]; d.LFTDigest != "d1" || l.LFTDigest != "l1" ||
		d.PerPort["5 z0-spine0"] != 9 || l.PerPort["5 z0-spine0"] != 8 {
		t.Errorf("desired %+v live %+v", d, l)
	}
	if got := (Sync{}).tables(false); got == nil || len(got) != 0 {
		t.Errorf("no tables should be an empty map, got %v", got)
	}
}

func TestOnlyRoutingHasSwitchesAndBothImport(t *testing.T) {
	ctx := context.Background()
	for _, f := range []func() resource.Resource{NewRoutingResource, NewNetBoxResource} {
		r := f()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "loom"}, &meta)
		var resp resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &resp)
		_, has := resp.Schema.Attributes["switches"]
		if has != (meta.TypeName == "loom_routing") {
			t.Errorf("%s: switches attribute present = %v", meta.TypeName, has)
		}
		if _, ok := r.(resource.ResourceWithImportState); !ok {
			t.Errorf("%s cannot be imported", meta.TypeName)
		}
	}
}
