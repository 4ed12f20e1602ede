// The Go ingext_api client's NotificationService against a real seclake.
//
// The client's source cannot be fetched where the tests run, so its calls are
// rebuilt here from its documented shapes (no client code is copied): the
// generic dao request {action, args: {id, entry, flag}}, the endpoint model
// EndpointConfig {name, integration, action, email: {to, cc}, slack:
// {channel, channels, integrationName}} with the same JSON names and Go
// types, the add answer {id} and the list answer {entries}. Go's
// encoding/json fails a whole decode on a field of the wrong JSON type, as
// the client does.
//
//	go run main.go <base url> <token>
//
// Prints one "ok"/"not ok" line per step and "N passed, M failed" last.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

type EndpointEmailConfig struct {
	To []string `json:"to,omitempty"`
	Cc []string `json:"cc,omitempty"`
}

type EndpointSlackConfig struct {
	Channel         string   `json:"channel,omitempty"`
	Channels        []string `json:"channels,omitempty"`
	IntegrationName string   `json:"integrationName,omitempty"`
}

type EndpointConfig struct {
	Name        string               `json:"name"`
	Integration string               `json:"integration"`
	Action      string               `json:"action"`
	Email       *EndpointEmailConfig `json:"email,omitempty"`
	Slack       *EndpointSlackConfig `json:"slack,omitempty"`
}

type DaoArgs[T any] struct {
	Id    string `json:"id,omitempty"`
	Entry *T     `json:"entry,omitempty"`
	Flag  bool   `json:"flag,omitempty"`
}

type DaoRequest[T any] struct {
	Action string      `json:"action"`
	Args   *DaoArgs[T] `json:"args,omitempty"`
}

type DaoAddResponse struct {
	ID string `json:"id"`
}

type DaoListResponse[T any] struct {
	Entries []*T `json:"entries"`
}

type DaoEntryResponse[T any] struct {
	Entry *T `json:"entry"`
}

type envelope struct {
	Verdict  string          `json:"verdict"`
	Error    string          `json:"error"`
	Response json.RawMessage `json:"response"`
}

var base, token string

// apiCall posts {function, kargs} to api/ds/<function>, as the client does.
func apiCall(function string, kargs interface{}, out interface{}) error {
	body, _ := json.Marshal(map[string]interface{}{"function": function, "kargs": kargs})
	req, _ := http.NewRequest("POST", base+"/api/ds/"+function, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP Error: %s", resp.Status)
	}
	raw, _ := io.ReadAll(resp.Body)
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("envelope: %w", err)
	}
	if env.Verdict != "OK" {
		return fmt.Errorf("verdict %s: %s", env.Verdict, env.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Response, out)
}

const dao = "platform_notification_endpoint_dao"

func addEmail(name, action string, to, cc []string) (string, error) {
	req := &DaoRequest[EndpointConfig]{Action: "add", Args: &DaoArgs[EndpointConfig]{Entry: &EndpointConfig{
		Name: name, Integration: "Email", Action: action, Email: &EndpointEmailConfig{To: to, Cc: cc}}}}
	var resp DaoAddResponse
	err := apiCall(dao, req, &resp)
	return resp.ID, err
}

func addSlack(name, action, channel, integration string) (string, error) {
	req := &DaoRequest[EndpointConfig]{Action: "add", Args: &DaoArgs[EndpointConfig]{Entry: &EndpointConfig{
		Name: name, Integration: "Slack", Action: action,
		Slack: &EndpointSlackConfig{Channel: channel, Channels: []string{channel}, IntegrationName: integration}}}}
	var resp DaoAddResponse
	err := apiCall(dao, req, &resp)
	return resp.ID, err
}

func list() ([]*EndpointConfig, error) {
	var resp DaoListResponse[EndpointConfig]
	err := apiCall(dao, &DaoRequest[EndpointConfig]{Action: "list"}, &resp)
	return resp.Entries, err
}

func get(name string) (*EndpointConfig, error) {
	var resp DaoEntryResponse[EndpointConfig]
	err := apiCall(dao, &DaoRequest[EndpointConfig]{Action: "get", Args: &DaoArgs[EndpointConfig]{Id: name}}, &resp)
	return resp.Entry, err
}

func del(name string) error {
	return apiCall(dao, &DaoRequest[EndpointConfig]{Action: "delete", Args: &DaoArgs[EndpointConfig]{Id: name}}, nil)
}

func main() {
	base, token = os.Args[1], os.Args[2]
	passed, failed := 0, 0
	check := func(what string, ok bool, detail interface{}) {
		if ok {
			passed++
			fmt.Println("ok", what)
		} else {
			failed++
			fmt.Println("not ok", what, detail)
		}
	}
	id, err := addEmail("ops-mail", "Generic_Email_Action", []string{"soc@example.org"}, []string{"lead@example.org"})
	check("AddEmail answers the endpoint's id", err == nil && id == "ops-mail", fmt.Sprint(id, err))
	id, err = addSlack("ops-slack", "Generic_Slack_Action", "#soc", "soc-workspace")
	check("add a Slack endpoint", err == nil && id == "ops-slack", fmt.Sprint(id, err))
	_, err = addEmail("ops-mail", "Generic_Email_Action", []string{"soc@example.org"}, nil)
	check("a second add of one name is an error", err != nil, err)
	entries, err := list()
	byName := map[string]*EndpointConfig{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	mail := byName["ops-mail"]
	check("List decodes the entries", err == nil && len(entries) == 2, fmt.Sprint(len(entries), err))
	check("an Email entry as added", mail != nil && mail.Integration == "Email" && mail.Action == "Generic_Email_Action" &&
		mail.Email != nil && len(mail.Email.To) == 1 && mail.Email.To[0] == "soc@example.org" &&
		len(mail.Email.Cc) == 1 && mail.Email.Cc[0] == "lead@example.org", fmt.Sprintf("%+v", mail))
	slack := byName["ops-slack"]
	check("a Slack entry as added", slack != nil && slack.Integration == "Slack" && slack.Slack != nil &&
		slack.Slack.Channel == "#soc" && slack.Slack.IntegrationName == "soc-workspace", fmt.Sprintf("%+v", slack))
	one, err := get("ops-slack")
	check("Get by name", err == nil && one != nil && one.Name == "ops-slack", fmt.Sprint(one, err))
	err = del("ops-mail")
	check("Delete by name", err == nil, err)
	entries, err = list()
	check("the deleted endpoint is gone", err == nil && len(entries) == 1 && entries[0].Name == "ops-slack",
		fmt.Sprint(len(entries), err))
	err = del("ops-mail")
	check("deleting it again is an error", err != nil, err)
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
