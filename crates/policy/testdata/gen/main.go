// Command gen writes ../minio-vectors.json: answers computed by MinIO's own
// policy package (github.com/minio/pkg/v3/policy, the one the MinIO server
// links), which crates/policy/tests/oracle.rs compares the Rust crate with.
//
//	cd crates/policy/testdata/gen && go run . > ../minio-vectors.json
//
// What it records:
//   - wildcard: wildcard.Match and wildcard.MatchSimple on random patterns;
//   - dates: time.Parse(time.RFC3339, s), which MinIO's Date* conditions use;
//   - ips: net.ParseCIDR, net.ParseIP and IPNet.Contains (IpAddress);
//   - actions: which action names MinIO accepts, which act on objects, and
//     the condition keys each takes (IAMActionConditionKeyMap.Lookup);
//   - policies: for each document, whether policy.ParseConfig (identity
//     policies) and policy.ParseBucketPolicyConfig(bucket "mybucket")
//     accept it and, if so, the decision for every request of "requests"
//     (one letter each: A allow, D explicit deny, N no statement applies),
//     computed statement by statement with Statement.IsAllowed and
//     BPStatement.IsAllowed and checked against Policy.IsAllowed;
//   - builtins: MinIO's canned policies (policy.DefaultPolicies) as JSON.
//
// Documents tagged "differs" are ones the Rust crate deliberately reads
// differently (see its crate documentation); the tag says why, and the
// test checks that the difference is the one documented.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/minio/pkg/v3/policy"
	"github.com/minio/pkg/v3/policy/condition"
	"github.com/minio/pkg/v3/wildcard"
)

const bucketName = "mybucket"

type wildcardVec struct {
	Pattern string `json:"pattern"`
	Text    string `json:"text"`
	Match   bool   `json:"match"`
	Simple  bool   `json:"simple"`
}

type dateVec struct {
	Text  string `json:"text"`
	OK    bool   `json:"ok"`
	Unix  int64  `json:"unix"`
	Nanos int    `json:"nanos"`
}

type ipVec struct {
	CIDR     string `json:"cidr"`
	IP       string `json:"ip"`
	CIDROK   bool   `json:"cidr_ok"`
	IPOK     bool   `json:"ip_ok"`
	Contains bool   `json:"contains"`
}

type actionVec struct {
	Action string   `json:"action"`
	Valid  bool     `json:"valid"`
	Object bool     `json:"object"`
	Admin  bool     `json:"admin"`
	KMS    bool     `json:"kms"`
	STS    bool     `json:"sts"`
	Keys   []string `json:"keys"`
}

type request struct {
	Action     string              `json:"action"`
	Bucket     string              `json:"bucket"`
	Object     string              `json:"object"`
	Account    string              `json:"account"`
	Conditions map[string][]string `json:"conditions"`
}

type result struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Set when MinIO's message depends on Go's map order (which action or
	// key of a set it names first); Error is then the least of those seen.
	ErrorVaries bool   `json:"error_varies,omitempty"`
	Decisions   string `json:"decisions,omitempty"`
}

type policyVec struct {
	JSON    string `json:"json"`
	Differs string `json:"differs,omitempty"`
	IAM     result `json:"iam"`
	Bucket  result `json:"bucket"`
}

type builtinVec struct {
	Name      string `json:"name"`
	JSON      string `json:"json"`
	Decisions string `json:"decisions"`
}

type output struct {
	Source   string        `json:"source"`
	Wildcard []wildcardVec `json:"wildcard"`
	Dates    []dateVec     `json:"dates"`
	IPs      []ipVec       `json:"ips"`
	Actions  []actionVec   `json:"actions"`
	Requests []request     `json:"requests"`
	Policies []policyVec   `json:"policies"`
	Builtins []builtinVec  `json:"builtins"`
}

// conditionValues turns a request into MinIO's condition map, which is
// keyed by the key name without its "aws:"/"s3:"/"jwt:" prefix.
func conditionValues(r request) map[string][]string {
	m := map[string][]string{}
	for k, v := range r.Conditions {
		m[condition.KeyName(k).Name()] = v
	}
	return m
}

func iamArgs(r request) policy.Args {
	return policy.Args{
		AccountName:     r.Account,
		Action:          policy.Action(r.Action),
		BucketName:      r.Bucket,
		ObjectName:      r.Object,
		ConditionValues: conditionValues(r),
	}
}

func bucketArgs(r request) policy.BucketPolicyArgs {
	return policy.BucketPolicyArgs{
		AccountName:     r.Account,
		Action:          policy.Action(r.Action),
		BucketName:      r.Bucket,
		ObjectName:      r.Object,
		ConditionValues: conditionValues(r),
	}
}

func iamDecisions(p *policy.Policy, reqs []request) string {
	var b strings.Builder
	for _, r := range reqs {
		a := iamArgs(r)
		d := byte('N')
		for _, st := range p.Statements {
			if st.Effect == policy.Allow && st.IsAllowed(a) {
				d = 'A'
			}
		}
		for _, st := range p.Statements {
			if st.Effect == policy.Deny && !st.IsAllowed(a) {
				d = 'D'
			}
		}
		if p.IsAllowed(a) != (d == 'A') {
			panic(fmt.Sprintf("IsAllowed disagrees with the statements: %+v", r))
		}
		b.WriteByte(d)
	}
	return b.String()
}

func bucketDecisions(p *policy.BucketPolicy, reqs []request) string {
	var b strings.Builder
	for _, r := range reqs {
		a := bucketArgs(r)
		d := byte('N')
		for _, st := range p.Statements {
			if st.Effect == policy.Allow && st.IsAllowed(a) {
				d = 'A'
			}
		}
		for _, st := range p.Statements {
			if st.Effect == policy.Deny && !st.IsAllowed(a) {
				d = 'D'
			}
		}
		if p.IsAllowed(a) != (d == 'A') {
			panic(fmt.Sprintf("IsAllowed disagrees with the statements: %+v", r))
		}
		b.WriteByte(d)
	}
	return b.String()
}

// sortSets sorts the members of each "[a b c]" list in a message (the
// unsupported condition keys), which Go prints in map order.
func sortSets(m string) string {
	return regexp.MustCompile(`'\[[^\]]*\]'`).ReplaceAllStringFunc(m, func(s string) string {
		items := strings.Fields(s[2 : len(s)-2])
		sort.Strings(items)
		return "'[" + strings.Join(items, " ") + "]'"
	})
}

// failure parses a refused document many times, since the message may
// name whichever member of a Go map comes first.
func failure(parse func() error) result {
	seen := map[string]bool{}
	least := ""
	for i := 0; i < 64; i++ {
		m := sortSets(parse().Error())
		if !seen[m] && (least == "" || m < least) {
			least = m
		}
		seen[m] = true
	}
	return result{Error: least, ErrorVaries: len(seen) > 1}
}

func evaluate(doc string, differs string, reqs []request) policyVec {
	v := policyVec{JSON: doc, Differs: differs}
	if p, err := policy.ParseConfig(strings.NewReader(doc)); err != nil {
		v.IAM = failure(func() error {
			_, err := policy.ParseConfig(strings.NewReader(doc))
			return err
		})
	} else {
		v.IAM = result{OK: true, Decisions: iamDecisions(p, reqs)}
	}
	if p, err := policy.ParseBucketPolicyConfig(strings.NewReader(doc), bucketName); err != nil {
		v.Bucket = failure(func() error {
			_, err := policy.ParseBucketPolicyConfig(strings.NewReader(doc), bucketName)
			return err
		})
	} else if p.Version == "" {
		// MinIO's PutBucketPolicy refuses a policy without a version.
		v.Bucket = result{Error: "The policy must contain a valid version string"}
	} else {
		v.Bucket = result{OK: true, Decisions: bucketDecisions(p, reqs)}
	}
	return v
}

func wildcardVectors() []wildcardVec {
	rng := rand.New(rand.NewSource(7))
	gen := func(alphabet string, max int) string {
		n := rng.Intn(max + 1)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	out := []wildcardVec{}
	for i := 0; i < 1500; i++ {
		p, t := gen("ab*?/", 7), gen("ab/", 7)
		out = append(out, wildcardVec{p, t, wildcard.Match(p, t), wildcard.MatchSimple(p, t)})
	}
	for _, c := range [][2]string{
		{"", ""}, {"*", ""}, {"?", ""}, {"a?", "a"}, {"a?b", "a"}, {"*?x", "ab"},
		{"?", "é"}, {"??", "é"}, {"my*", "mybucket"}, {"mybucket/*", "mybucket/"},
		{"mybucket/*", "mybucket"}, {"*", "anything/at/all"},
	} {
		out = append(out, wildcardVec{c[0], c[1], wildcard.Match(c[0], c[1]), wildcard.MatchSimple(c[0], c[1])})
	}
	return out
}

func dateVectors() []dateVec {
	texts := []string{
		"1970-01-01T00:00:00Z", "2020-01-01T00:00:00Z", "2020-01-01T01:00:00+01:00",
		"2019-12-31T23:00:00-01:00", "2020-01-01T00:00:00.5Z", "2020-01-01T00:00:00,5Z",
		"2020-01-01T00:00:00.123456789999Z", "2020-01-01T1:00:00Z", "2020-02-29T00:00:00Z",
		"2019-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2020-01-01T00:00:00+24:00",
		"2020-01-01T00:00:00+24:60", "2020-01-01T00:00:00+25:00", "2020-01-01T00:00:00+00:61",
		"2020-01-01T00:00:00-23:59", "2020-01-01", "2020-01-01T00:00:00", "2020-01-01t00:00:00Z",
		"2020-01-01T00:00:00z", "2020-01-01 00:00:00Z", "2020-13-01T00:00:00Z",
		"2020-00-01T00:00:00Z", "2020-04-31T00:00:00Z", "2020-01-01T24:00:00Z",
		"2020-01-01T00:60:00Z", "2020-01-01T00:00:60Z", "2020-01-01T00:00:00+0000",
		"2020-01-01T00:00:00.Z", "2020-01-01T00:00:00ZZ", "+2020-01-01T00:00:00Z",
		"20201-01-01T00:00:00Z", "2020-1-01T00:00:00Z", "2020-01-1T00:00:00Z",
		"2020-01-01T001:00:00Z", "2020-01-01T00:0:00Z", "2020-01-01T00:00:0Z", "",
		"2024-06-01T12:00:00Z", "2024-06-01T12:00:00.000000001Z", "2024-06-01T14:00:00+02:00",
		"2020-01-01T00:00:00.1234567891234Z", "2020-01-01T09:00:00+0900", "2020-01-01T00:00:00 Z",
		" 2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z ", "2020-01-01T00:00:00+09:00:00",
		"2020-01-01T00:00:00-00:00", "2020-01-01T00:00:00+1:00", "2020-01-01T00:00:00.1.2Z",
		"2021-02-28T23:59:59.999999999Z",
	}
	out := []dateVec{}
	for _, s := range texts {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			out = append(out, dateVec{Text: s})
			continue
		}
		out = append(out, dateVec{Text: s, OK: true, Unix: t.Unix(), Nanos: t.Nanosecond()})
	}
	return out
}

func ipVectors() []ipVec {
	cidrs := []string{
		"10.0.0.0/8", "10.1.2.3/8", "0.0.0.0/0", "10.0.0.0/008", "1.2.3.4/32", "1.2.3.4/33",
		"2001:db8::/32", "::/0", "::ffff:10.0.0.0/104", "::ffff:0.0.0.0/96", "::ffff:0:0/80",
		"fe80::/10", "10.0.0.0", "10.0.0.0/", "10.0.0.0/-1", "::/129", "a/8", "01.2.3.4/8",
		"1.2.3.4/24 ", "fe80::1%eth0/64", "::ffff:1.2.3.4/128", "2001:db8::1/128",
	}
	ips := []string{
		"10.1.2.3", "11.0.0.1", "1.2.3.4", "1.2.3.5", "::ffff:10.1.2.3", "2001:db8::5",
		"2001:db9::5", "::1", "fe80::1", "0.0.0.0", "junk", "01.2.3.4", "1.2.3.4.5",
		"::ffff:1.2.3.4", "fe80::1%eth0", "1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:8::", "::",
		"192.168.0.1", "255.255.255.255", "256.0.0.1", "1::2::3", "1.2.3", "",
	}
	out := []ipVec{}
	for _, c := range cidrs {
		_, n, cerr := net.ParseCIDR(c)
		for _, s := range ips {
			ip := net.ParseIP(s)
			v := ipVec{CIDR: c, IP: s, CIDROK: cerr == nil, IPOK: ip != nil}
			if cerr == nil && ip != nil {
				v.Contains = n.Contains(ip)
			}
			out = append(out, v)
		}
	}
	return out
}

func actionVectors() []actionVec {
	names := []string{
		"s3:*", "*", "s3:GetObject", "s3:Get*", "s3:*Object", "s3:?etObject", "s3:List*",
		"s3:ListBucket", "s3:ListBucketVersions", "s3:PutObject", "s3:DeleteObject",
		"s3:GetObjectVersion", "s3:PutObjectRetention", "s3:BypassGovernanceRetention",
		"s3:PutBucketTagging", "s3:PutObjectTagging", "s3:GetObjectAttributes",
		"s3:CreateBucket", "s3:DeleteBucket", "s3:GetBucketPolicy", "s3:Bogus", "s3:getobject",
		"s3:Put*", "s3:*Tagging", "s3:Replicate*", "s3:?", "admin:*", "admin:ServerInfo",
		"admin:ForceUnlock", "admin:Server*", "admin:CreateUser", "kms:*", "kms:CreateKey",
		"kms:Nope", "sts:AssumeRoleWithWebIdentity", "sts:*", "", "s3", "s3:",
		"s3:GetObjectLegalHold", "s3:PutObjectLegalHold", "s3:RestoreObject",
		"s3:ListenNotification", "s3:PutObjectFanOut", "s3:GetObjectVersionForReplication",
	}
	out := []actionVec{}
	for _, n := range names {
		keys := []string{}
		for k := range policy.IAMActionConditionKeyMap.Lookup(policy.Action(n)) {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		out = append(out, actionVec{
			Action: n,
			Valid:  policy.Action(n).IsValid(),
			Object: policy.Action(n).IsObjectAction(),
			Admin:  policy.AdminAction(n).IsValid(),
			KMS:    policy.KMSAction(n).IsValid(),
			STS:    policy.STSAction(n).IsValid(),
			Keys:   keys,
		})
	}
	return out
}

func builtins(reqs []request) []builtinVec {
	type st struct {
		Effect   string   `json:"Effect"`
		Action   []string `json:"Action"`
		Resource []string `json:"Resource,omitempty"`
	}
	type doc struct {
		Version   string `json:"Version"`
		Statement []st   `json:"Statement"`
	}
	out := []builtinVec{}
	for _, d := range policy.DefaultPolicies {
		x := doc{Version: d.Definition.Version}
		for _, s := range d.Definition.Statements {
			var acts, res []string
			for a := range s.Actions {
				acts = append(acts, string(a))
			}
			for r := range s.Resources {
				res = append(res, r.String())
			}
			sort.Strings(acts)
			sort.Strings(res)
			x.Statement = append(x.Statement, st{string(s.Effect), acts, res})
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			panic(err)
		}
		def := d.Definition
		out = append(out, builtinVec{
			Name:      d.Name,
			JSON:      strings.TrimSpace(b.String()),
			Decisions: iamDecisions(&def, reqs),
		})
	}
	return out
}

func main() {
	reqs := requests()
	out := output{
		Source:   "github.com/minio/pkg/v3 v3.1.3 (crates/policy/testdata/gen)",
		Wildcard: wildcardVectors(),
		Dates:    dateVectors(),
		IPs:      ipVectors(),
		Actions:  actionVectors(),
		Requests: reqs,
		Builtins: builtins(reqs),
	}
	for _, d := range documents() {
		out.Policies = append(out.Policies, evaluate(d.json, d.differs, reqs))
	}
	for _, d := range randomDocuments(400) {
		out.Policies = append(out.Policies, evaluate(d, "", reqs))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
