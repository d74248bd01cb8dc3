// Command argocd-lua runs an Argo CD resource customization script (health.lua, an action's action.lua or
// discovery.lua) on one object, in gopher-lua (github.com/yuin/gopher-lua, the interpreter Argo CD embeds) set up
// as Argo CD sets it up for a script from argocd-cm: no standard library but package, base and table, the object
// as the global `obj`, one second to run.
//
//	argocd-lua health script.lua < object.json      prints {"status": ..., "message": ...}
//	argocd-lua discovery script.lua < object.json   prints the actions table the script returns, as JSON
//	argocd-lua action script.lua < object.json      prints the object the script returns (what Argo CD patches)
//
// As in Argo CD, a health status outside Healthy/Progressing/Degraded/Suspended/Missing/Unknown becomes Unknown,
// and Lua's one kind of table is read back the way Argo CD reads it: an empty table is an empty list, except in a
// returned object where the original object held a map (Lua cannot tell the two apart).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// version is stamped by test/cluster/build.sh with a checksum of this module, so a changed source is rebuilt.
var version = "dev"

const maxInputBytes = 4 << 20

var healthStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(version)
		return
	}
	mode := ""
	if len(os.Args) == 3 {
		mode = os.Args[1]
	}
	if mode != "health" && mode != "discovery" && mode != "action" {
		fmt.Fprintln(os.Stderr, "usage: argocd-lua health|discovery|action <script.lua> < object.json")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail(2, "cannot read the script: %v", err)
	}
	data, err := io.ReadAll(io.LimitReader(os.Stdin, maxInputBytes+1))
	if err != nil || len(data) > maxInputBytes {
		fail(2, "cannot read the object from stdin (at most 4 MiB)")
	}
	var object map[string]any
	if err := json.Unmarshal(data, &object); err != nil {
		fail(2, "not a JSON object: %v", err)
	}
	returned, err := run(string(script), object)
	if err != nil {
		fail(1, "%v", err)
	}
	var out any = returned
	switch mode {
	case "health":
		out = health(returned)
	case "action":
		out = restoreEmptyMaps(returned, object)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "argocd-lua: "+format+"\n", args...)
	os.Exit(code)
}

// run executes the script with `obj` set and returns its result converted to Go values.
func run(script string, object map[string]any) (any, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, object))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	return fromLua(l.Get(-1))
}

// health reads a returned table as Argo CD's HealthStatus.
func health(returned any) map[string]string {
	table, _ := returned.(map[string]any)
	status, _ := table["status"].(string)
	message, _ := table["message"].(string)
	if !healthStatuses[status] {
		return map[string]string{"status": "Unknown", "message": "Lua returned an invalid health status"}
	}
	return map[string]string{"status": status, "message": message}
}

func toLua(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case map[string]any:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetString(key, toLua(l, item))
		}
		return table
	case []any:
		table := l.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(toLua(l, item))
		}
		return table
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	default:
		return lua.LNil
	}
}

// restoreEmptyMaps turns an empty list back into an empty map wherever the original held a map at that place.
func restoreEmptyMaps(returned, original any) any {
	switch value := returned.(type) {
	case []any:
		if _, wasMap := original.(map[string]any); wasMap && len(value) == 0 {
			return map[string]any{}
		}
		if originalList, ok := original.([]any); ok {
			for i := range value {
				if i < len(originalList) {
					value[i] = restoreEmptyMaps(value[i], originalList[i])
				}
			}
		}
	case map[string]any:
		if originalMap, ok := original.(map[string]any); ok {
			for key, item := range value {
				value[key] = restoreEmptyMaps(item, originalMap[key])
			}
		}
	}
	return returned
}

// fromLua converts a result: a table with the keys 1..n is a list, an empty table an empty list, another table a map.
func fromLua(value lua.LValue) (any, error) {
	switch v := value.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, errors.New("the script returned a number that JSON cannot hold")
		}
		return float64(v), nil
	case *lua.LTable:
		if n := v.MaxN(); n == countKeys(v) {
			array := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				item, err := fromLua(v.RawGetInt(i))
				if err != nil {
					return nil, err
				}
				array = append(array, item)
			}
			return array, nil
		}
		object := map[string]any{}
		var err error
		v.ForEach(func(key, item lua.LValue) {
			if err != nil {
				return
			}
			name, ok := key.(lua.LString)
			if !ok {
				err = fmt.Errorf("the script returned a table with a %s key", key.Type())
				return
			}
			object[string(name)], err = fromLua(item)
		})
		return object, err
	default:
		return nil, fmt.Errorf("the script returned a %s", value.Type())
	}
}

func countKeys(table *lua.LTable) int {
	n := 0
	table.ForEach(func(lua.LValue, lua.LValue) { n++ })
	return n
}
