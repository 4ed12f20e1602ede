// Decodes seclake's answers with the Go clients' own types.
//
// The Go clients of this interface (the public ingext_api, fluency-go and
// fluency_api packages) decode each answer into fixed structs with
// encoding/json: a field of the wrong JSON type (a number where they declare
// a string, an object where they declare []string) fails the whole decode,
// and the client drops the answer. The structs below declare the fields
// those clients declare, with the same JSON names and Go types (written here
// from their documented shapes; no client code is copied), and every answer
// of a running seclake is decoded with them.
//
//	go run main.go <base url> <token>
//
// Prints one "ok"/"not ok" line per call and "N passed, M failed" last.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

type envelope struct {
	Verdict   string          `json:"verdict"`
	Error     string          `json:"error"`
	Exception string          `json:"exception"`
	Response  json.RawMessage `json:"response"`
}

// -- auth -------------------------------------------------------------------

type userEntry struct {
	Username      string   `json:"username,omitempty"`
	Email         string   `json:"email,omitempty"`
	FirstName     string   `json:"firstName,omitempty"`
	LastName      string   `json:"lastName,omitempty"`
	Organization  string   `json:"organization,omitempty"`
	Roles         []string `json:"roles"`
	OAuthProvider string   `json:"oauthProvider"`
	OAuthFlag     bool     `json:"oauthFlag"`
	DataPolicies  []string `json:"dataPolicies,omitempty"`
	APIPolicies   []string `json:"APIPolicies,omitempty"`
}

type listUserResponse struct {
	Users []*userEntry `json:"users"`
}

type getUserResponse struct {
	User *userEntry `json:"user"`
}

type apiTokenEntry struct {
	ID           string    `json:"id,omitempty"`
	Name         string    `json:"name,omitempty"`
	Description  string    `json:"description,omitempty"`
	Disabled     bool      `json:"disabled"`
	Token        string    `json:"token,omitempty"`
	Roles        []string  `json:"roles"`
	DataPolicies []string  `json:"dataPolicies"`
	APIPolicies  []string  `json:"APIPolicies"`
	LastAccess   int64     `json:"lastAccess"`
	CreatedOn    time.Time `json:"createdOn"`
	UpdatedOn    time.Time `json:"updatedOn"`
}

type addTokenResponse struct {
	Token string `json:"token"`
}

type listTokenResponse struct {
	Entries []*apiTokenEntry `json:"entries"`
}

type sessionRecord struct {
	SessionToken string   `json:"sessionToken"`
	UserName     string   `json:"userName"`
	Roles        []string `json:"roles"`
	Status       string   `json:"status"`
	Email        string   `json:"email"`
}

// -- event search -------------------------------------------------------------

type lakeSearchResponse struct {
	Took         int64                       `json:"took"`
	Hits         *legacySearchHits           `json:"hits,omitempty"`
	Aggregations map[string]*searchAggregate `json:"aggregations,omitempty"`
	Query        json.RawMessage             `json:"query"`
	Terms        []string                    `json:"terms,omitempty"`
}

type legacySearchHits struct {
	Total         uint64             `json:"total"`
	SortFieldType string             `json:"sortFieldType"`
	Hits          []*legacySearchHit `json:"hits"`
}

type legacySearchHit struct {
	Source json.RawMessage `json:"_source"`
	ID     string          `json:"_id,omitempty"`
}

type searchAggregate struct {
	TokenEntity string
	Buckets     []json.RawMessage `json:"buckets"`
}

type facetBucket struct {
	Key      string `json:"key"`
	DocCount int64  `json:"doc_count"`
}

type histogramBucket struct {
	Key      int64 `json:"key"`
	DocCount int64 `json:"doc_count"`
}

type eventRecord struct {
	Message   string                 `json:"@message"`
	Sender    string                 `json:"@sender"`
	Source    string                 `json:"@source"`
	Timestamp int64                  `json:"@timestamp"`
	Customer  string                 `json:"@customer"`
	Tags      []string               `json:"@tags"`
	Fields    map[string]interface{} `json:"@fields"`
	Type      string                 `json:"@type"`
}

type flowRecord struct {
	Timestamp int64 `json:"@timestamp"`
	Metaflow  struct {
		Flow struct {
			Sip    string `json:"sip"`
			Dip    string `json:"dip"`
			Sp     int    `json:"sp"`
			Dp     int    `json:"dp"`
			Prot   int    `json:"prot"`
			RxB    int64  `json:"rxB"`
			TxB    int64  `json:"txB"`
			TotalB int64  `json:"totalB"`
			RxP    int64  `json:"rxP"`
			TxP    int64  `json:"txP"`
			Dur    int64  `json:"dur"`
			TimeMs int64  `json:"time_ms"`
		} `json:"flow"`
	} `json:"@metaflow"`
}

// -- timeline, summaries, rules, audit (the Elasticsearch-shaped wrapper) -----

type elasticSearchResult struct {
	TookInMillis    int64                       `json:"took,omitempty"`
	TerminatedEarly bool                        `json:"terminated_early,omitempty"`
	ScrollId        string                      `json:"_scroll_id,omitempty"`
	Hits            *searchHits                 `json:"hits,omitempty"`
	Aggregations    map[string]*searchAggregate `json:"aggregations,omitempty"`
	TimedOut        bool                        `json:"timed_out,omitempty"`
}

type searchHits struct {
	MaxScore *float64           `json:"max_score,omitempty"`
	Hits     []*legacySearchHit `json:"hits,omitempty"`
}

type behaviorSummary struct {
	ID            string                 `json:"id"`
	From          int64                  `json:"from"`
	To            int64                  `json:"to"`
	Count         int                    `json:"count"`
	Key           string                 `json:"key"`
	KeyType       string                 `json:"keyType,omitempty"`
	DayIndex      string                 `json:"dayIndex,omitempty"`
	BehaviorRules []string               `json:"behaviorRules"`
	Behaviors     []string               `json:"behaviors"`
	Risks         []string               `json:"risks,omitempty"`
	RiskScore     int                    `json:"riskScore"`
	SummaryList   []*behaviorRuleSummary `json:"summaryList,omitempty"`
	ScoreLevel    string                 `json:"scoreLevel"`
	Comments      []*userComment         `json:"comments"`
	Status        string                 `json:"status,omitempty"`
	Incident      bool                   `json:"incident"`
	ScoreAdjust   int                    `json:"scoreAdjust"`
	UpdatedOn     int64                  `json:"updatedOn"`
}

type userComment struct {
	Content   string   `json:"content"`
	Actions   []string `json:"actions"`
	Username  string   `json:"username"`
	CreatedOn int64    `json:"createdOn"`
}

type behaviorRuleSummary struct {
	BehaviorRule       string                `json:"behaviorRule"`
	Behavior           string                `json:"behavior"`
	From               int64                 `json:"from"`
	To                 int64                 `json:"to"`
	Count              int                   `json:"count"`
	AttributeSummaries []*valueSummaryEntry  `json:"attributeSummaries"`
	Hits               []*behaviorRuleHit    `json:"hits,omitempty"`
	RiskScore          int                   `json:"riskScore"`
	Risks              []string              `json:"risks"`
}

type behaviorRuleHit struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields,omitempty"`
	Values []string `json:"values,omitempty"`
	Scope  string   `json:"scope,omitempty"`
	Risks  []string `json:"risks,omitempty"`
}

type valueSummaryEntry struct {
	Key    string   `json:"key"`
	Aliase string   `json:"aliase,omitempty"`
	Values []string `json:"values"`
}

type valueEntry struct {
	Key    string `json:"key"`
	Aliase string `json:"aliase,omitempty"`
	Value  string `json:"value"`
}

type behaviorEvent struct {
	Timestamp    int64              `json:"timestamp"`
	Key          string             `json:"key"`
	KeyType      string             `json:"keyType,omitempty"`
	BehaviorRule string             `json:"behaviorRule"`
	Behavior     string             `json:"behavior"`
	RiskScore    int                `json:"riskScore"`
	Attributes   []*valueEntry      `json:"attributes"`
	Risks        []string           `json:"risks,omitempty"`
	RuleRisks    []string           `json:"ruleRisks,omitempty"`
	RuleHits     []*behaviorRuleHit `json:"ruleHits,omitempty"`
}

type auditRecord struct {
	Account     string `json:"account"`
	Username    string `json:"username"`
	Email       string `json:"email"`
	Role        string `json:"role"`
	ClientIP    string `json:"clientIP"`
	Country     string `json:"country"`
	City        string `json:"city"`
	CreatedOn   int64  `json:"createdOn"`
	Dur         int64  `json:"dur"`
	Category    string `json:"category"`
	Error       string `json:"error"`
	DayIndex    string `json:"dayIndex"`
	Partition   string `json:"partition"`
	Action      string `json:"action"`
	ActionType  string `json:"action_type"`
	ActionInfo  string `json:"action_info"`
}

// -- the run ----------------------------------------------------------------------

var base, token string
var passed, failed int

func call(path string, kargs interface{}, out interface{}) error {
	body, _ := json.Marshal(map[string]interface{}{"function": path[strings.LastIndex(path, "/")+1:], "kargs": kargs})
	req, _ := http.NewRequest("POST", base+"/"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// As the clients do: anything but 200 loses the body.
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP Error: %s", resp.Status)
	}
	raw, _ := io.ReadAll(resp.Body)
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("envelope: %w", err)
	}
	if env.Verdict != "OK" {
		return fmt.Errorf("verdict %s: %s%s", env.Verdict, env.Error, env.Exception)
	}
	if err := json.Unmarshal(env.Response, out); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

func step(name string, fn func() error) {
	if err := fn(); err != nil {
		failed++
		fmt.Printf("not ok - %s\n  %v\n", name, err)
		return
	}
	passed++
	fmt.Printf("ok - %s\n", name)
}

func sources(hits []*legacySearchHit, out func(json.RawMessage) error) error {
	if len(hits) == 0 {
		return fmt.Errorf("no hits to decode")
	}
	for _, h := range hits {
		if h.ID == "" {
			return fmt.Errorf("a hit without _id")
		}
		if err := out(h.Source); err != nil {
			return fmt.Errorf("_source of %s: %w", h.ID, err)
		}
	}
	return nil
}

func options(searchStr, rangeField, sortField, sortOrder string, from, to int64) map[string]interface{} {
	return map[string]interface{}{"options": map[string]interface{}{
		"searchStr": searchStr, "range_from": from, "range_to": to, "range_field": rangeField,
		"fetchLimit": 100, "fetchOffset": 0, "sortField": sortField, "sortOrder": sortOrder,
		"facets": map[string]interface{}{"facets": []interface{}{}, "mustFilters": []interface{}{}, "mustNotFilters": []interface{}{}},
	}}
}

func main() {
	base, token = strings.TrimRight(os.Args[1], "/"), os.Args[2]
	now := time.Now().UnixMilli()
	from := now - 3*86400000

	step("auth/login into the session record", func() error {
		var s sessionRecord
		err := call("api/auth/login", map[string]string{"username": "admin", "password": os.Args[3]}, &s)
		if err == nil && (s.Status != "succeed" || s.SessionToken == "") {
			err = fmt.Errorf("session %+v", s)
		}
		return err
	})
	step("auth/userList into []*UserEntry", func() error {
		var r listUserResponse
		if err := call("api/auth/userList", map[string]interface{}{}, &r); err != nil {
			return err
		}
		if len(r.Users) == 0 {
			return fmt.Errorf("no users")
		}
		return nil
	})
	name := fmt.Sprintf("go-%d@example.com", now)
	step("auth/userAdd with the clients' UserEntry, getUser into response.user", func() error {
		entry := &userEntry{Username: name, Email: name, FirstName: "Go", Roles: []string{"analyst"}, OAuthProvider: "Google", OAuthFlag: true}
		var ignored json.RawMessage
		if err := call("api/auth/userAdd", map[string]interface{}{"user": entry}, &ignored); err != nil {
			return err
		}
		var r getUserResponse
		if err := call("api/auth/getUser", map[string]string{"username": name}, &r); err != nil {
			return err
		}
		if r.User == nil || r.User.Username != name || !r.User.OAuthFlag {
			return fmt.Errorf("getUser gave %+v", r.User)
		}
		return call("api/auth/userDelete", map[string]string{"username": name}, &ignored)
	})
	step("auth/api_token add, list into []*ApiTokenEntry (string id, times), delete by name", func() error {
		entry := &apiTokenEntry{Name: name, Description: "go", Roles: []string{"analyst"}}
		var added addTokenResponse
		if err := call("api/auth/api_token", map[string]interface{}{"action": "add", "args": map[string]interface{}{"entry": entry}}, &added); err != nil {
			return err
		}
		if !strings.HasPrefix(added.Token, "slk_") {
			return fmt.Errorf("token %q", added.Token)
		}
		var listed listTokenResponse
		if err := call("api/auth/api_token", map[string]interface{}{"action": "list"}, &listed); err != nil {
			return err
		}
		found := false
		for _, t := range listed.Entries {
			if t.Name == name {
				found = t.ID != "" && !t.CreatedOn.IsZero() && t.Description == "go"
			}
		}
		if !found {
			return fmt.Errorf("the token is not listed as added")
		}
		var ignored json.RawMessage
		if err := call("api/auth/api_token", map[string]interface{}{"action": "delete", "args": map[string]interface{}{"id": name}}, &ignored); err != nil {
			return err
		}
		// ingext_api's DeleteToken then ListToken: the deleted token is gone.
		var after listTokenResponse
		if err := call("api/auth/api_token", map[string]interface{}{"action": "list"}, &after); err != nil {
			return err
		}
		for _, t := range after.Entries {
			if t.Name == name {
				return fmt.Errorf("the deleted token %s is still listed", t.ID)
			}
		}
		return nil
	})
	step("event search: hits, facet and histogram buckets, terms", func() error {
		var r lakeSearchResponse
		kargs := map[string]interface{}{"partition": "default", "dataType": "event", "options": map[string]interface{}{
			"dateFacetField": "@timestamp", "searchStr": "", "range_from": from, "range_to": now, "fetchLimit": 50,
			"sortField": "@timestamp", "sortOrder": "desc", "dataType": "event",
			"facets": map[string]interface{}{"facets": []map[string]interface{}{{"field": "@sender", "size": 10, "order": "count", "title": "Sender"}},
				"mustFilters": []interface{}{}, "mustNotFilters": []interface{}{},
				"dateFacets": []map[string]string{{"name": "dateHistogram", "key": "@timestamp", "interval": "hour"}}}}}
		if err := call("api/ds/get_index_zoom_histogram_lv3", kargs, &r); err != nil {
			return err
		}
		for name, agg := range r.Aggregations {
			for _, raw := range agg.Buckets {
				if name == "dateHistogram" {
					var b histogramBucket
					if err := json.Unmarshal(raw, &b); err != nil {
						return fmt.Errorf("histogram bucket: %w", err)
					}
				} else {
					var b facetBucket
					if err := json.Unmarshal(raw, &b); err != nil {
						return fmt.Errorf("facet %s bucket: %w", name, err)
					}
				}
			}
		}
		return sources(r.Hits.Hits, func(raw json.RawMessage) error { var e eventRecord; return json.Unmarshal(raw, &e) })
	})
	step("flow search: @metaflow.flow", func() error {
		var r lakeSearchResponse
		kargs := map[string]interface{}{"partition": "default", "dataType": "flow", "options": map[string]interface{}{
			"dateFacetField": "@timestamp", "searchStr": "", "range_from": from, "range_to": now, "fetchLimit": 50, "dataType": "flow"}}
		if err := call("api/ds/get_index_zoom_histogram_lv3", kargs, &r); err != nil {
			return err
		}
		return sources(r.Hits.Hits, func(raw json.RawMessage) error {
			var f flowRecord
			if err := json.Unmarshal(raw, &f); err != nil {
				return err
			}
			if f.Metaflow.Flow.Sip == "" || f.Metaflow.Flow.TimeMs == 0 {
				return fmt.Errorf("no @metaflow.flow in %s", raw)
			}
			return nil
		})
	})
	step("summary search into BehaviorSummary", func() error {
		var r elasticSearchResult
		if err := call("api/ds/behavior_summary_search", options("", "from", "to", "desc", from, now), &r); err != nil {
			return err
		}
		return sources(r.Hits.Hits, func(raw json.RawMessage) error { var s behaviorSummary; return json.Unmarshal(raw, &s) })
	})
	step("timeline search into BehaviorEvent", func() error {
		var r elasticSearchResult
		if err := call("api/ds/fsm_behavior_search", options("riskScore:[100 TO *]", "timestamp", "timestamp", "desc", from, now), &r); err != nil {
			return err
		}
		return sources(r.Hits.Hits, func(raw json.RawMessage) error { var b behaviorEvent; return json.Unmarshal(raw, &b) })
	})
	step("rule search: one rule per hits.hits[]._source", func() error {
		var r elasticSearchResult
		if err := call("api/ds/eventwatch_bucket_search", options("", "", "name", "asc", 0, 0), &r); err != nil {
			return err
		}
		return sources(r.Hits.Hits, func(raw json.RawMessage) error {
			var rule struct {
				Name string `json:"name,omitempty"`
			}
			if err := json.Unmarshal(raw, &rule); err != nil || rule.Name == "" {
				return fmt.Errorf("rule %s: %v", raw, err)
			}
			return nil
		})
	})
	step("audit search: string _id, the clients' audit record", func() error {
		var r elasticSearchResult
		if err := call("api/ds/audit_search", options("", "createdOn", "createdOn", "desc", from, now+60000), &r); err != nil {
			return err
		}
		return sources(r.Hits.Hits, func(raw json.RawMessage) error { var a auditRecord; return json.Unmarshal(raw, &a) })
	})
	step("audit list: every auth/login entry names the user it was made for", func() error {
		var r elasticSearchResult
		if err := call("api/ds/audit_search", options(`action:"auth/login"`, "createdOn", "createdOn", "desc", from, now+60000), &r); err != nil {
			return err
		}
		return sources(r.Hits.Hits, func(raw json.RawMessage) error {
			var a auditRecord
			if err := json.Unmarshal(raw, &a); err != nil {
				return err
			}
			if a.Action != "auth/login" || a.Username == "" {
				return fmt.Errorf("an auth/login entry without its username (fluency audit list shows it blank): %s", raw)
			}
			return nil
		})
	})
	step("a query error reaches the client with its position", func() error {
		var r elasticSearchResult
		err := call("api/ds/behavior_summary_search", options("riskScore:[3000 TO", "from", "to", "desc", from, now), &r)
		if err == nil || !strings.Contains(err.Error(), "verdict ERROR") || !strings.Contains(err.Error(), "position") {
			return fmt.Errorf("expected a query error with its position, got %v", err)
		}
		return nil
	})
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
