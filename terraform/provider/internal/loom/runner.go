package loom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// Interface is the version of Loom's JSON interface this provider reads (`"interface"` key).
const Interface = 1

// Runner runs the loom command line; one per provider configuration.
type Runner struct {
	Command  string   // the loom executable
	StateDir string   // LOOM_STATE_DIR for the simulated fabric's state ("" = loom's default)
	Env      []string // extra KEY=VALUE pairs (NETBOX_URL); the rest of the environment is inherited
}

// Problem is one entry of an error document: where the fault is and how to fix it.
type Problem struct {
	File    *string `json:"file"`
	Line    *int64  `json:"line"`
	Path    string  `json:"path"`
	Message string  `json:"message"`
	Fix     string  `json:"fix"`
}

// Where is "file:line: path" as far as it is known.
func (p Problem) Where() string {
	where := ""
	if p.File != nil {
		where = *p.File
		if p.Line != nil {
			where = fmt.Sprintf("%s:%d", where, *p.Line)
		}
	}
	if p.Path != "" {
		if where != "" {
			where += ": "
		}
		where += p.Path
	}
	return where
}

// Doc is the envelope of every `loom tf` / `loom fabric --format json` answer.
type Doc struct {
	Interface int             `json:"interface"`
	Errors    []Problem       `json:"errors"`
	Raw       json.RawMessage `json:"-"`
}

// Run runs `loom args...` and returns its JSON document and exit code (0 in sync, 2 changes).
// Exit 1 and anything unexpected become diagnostics attributed to `attr` (the model argument):
// Loom's problems one by one with file, line and field, or its stderr when it gave no document.
func (r Runner) Run(ctx context.Context, attr path.Path, args ...string) ([]byte, int, diag.Diagnostics) {
	var diags diag.Diagnostics
	command := r.Command
	if command == "" {
		command = "loom"
	}
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = append(os.Environ(), r.Env...)
	if r.StateDir != "" {
		cmd.Env = append(cmd.Env, "LOOM_STATE_DIR="+r.StateDir)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		diags.AddAttributeError(attr, "cannot run loom",
			fmt.Sprintf("%s: %v (set the provider's `command` or LOOM_BIN to the loom executable)", command, err))
		return nil, 1, diags
	}
	line := "loom " + strings.Join(args, " ")
	var doc Doc
	if jerr := json.Unmarshal(stdout.Bytes(), &doc); jerr != nil || doc.Interface != Interface {
		detail := strings.TrimSpace(stderr.String())
		if detail == "" {
			detail = strings.TrimSpace(stdout.String())
		}
		if code == 0 || code == 2 {
			detail = fmt.Sprintf("expected a JSON document of interface %d on stdout (%v); got: %.500s", Interface, jerr, detail)
		}
		diags.AddAttributeError(attr, fmt.Sprintf("%s failed (exit %d)", line, code), detail)
		return nil, 1, diags
	}
	for _, p := range doc.Errors {
		detail := p.Message
		if w := p.Where(); w != "" {
			detail = w + ": " + detail
		}
		if p.Fix != "" {
			detail += "\nfix: " + p.Fix
		}
		diags.AddAttributeError(attr, "loom: "+p.Message, detail)
	}
	if code != 0 && code != 2 && !diags.HasError() {
		diags.AddAttributeError(attr, fmt.Sprintf("%s failed (exit %d)", line, code), strings.TrimSpace(stderr.String()))
	}
	if diags.HasError() {
		return nil, 1, diags
	}
	return stdout.Bytes(), code, diags
}

// FromEnv is the loom executable when the provider configuration names none: $LOOM_BIN, else `loom` on PATH.
func FromEnv() string {
	if v := os.Getenv("LOOM_BIN"); v != "" {
		return v
	}
	return "loom"
}
