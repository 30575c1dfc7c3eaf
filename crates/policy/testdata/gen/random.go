package main

import (
	"encoding/json"
	"math/rand"
)

// randomDocuments draws policies from pools of the parts the hand-written
// cases use, half of them as bucket policies. Many are invalid (a
// condition key the actions do not take, a bucket action on an object
// resource); those exercise validation instead.
func randomDocuments(n int) []string {
	rng := rand.New(rand.NewSource(42))
	actions := []string{
		"s3:GetObject", "s3:PutObject", "s3:ListBucket", "s3:Get*", "s3:*", "s3:List*",
		"s3:DeleteObject", "s3:GetObjectVersion", "s3:*Object", "s3:?etObject",
		"s3:ListBucketVersions", "s3:GetBucketLocation", "s3:PutObjectRetention",
	}
	resources := []string{
		"arn:aws:s3:::mybucket", "arn:aws:s3:::mybucket/*", "arn:aws:s3:::*",
		"arn:aws:s3:::mybucket/home/${aws:username}/*", "arn:aws:s3:::my*",
		"arn:aws:s3:::mybucket/public/*", "arn:aws:s3:::other/*", "arn:aws:s3:::*/photo.jpg",
		"*", "arn:aws:s3:::mybucket/a/b", "arn:aws:s3:::mybucket?", "arn:aws:s3:::mybucket/*/*",
	}
	principals := []any{"*", map[string]any{"AWS": "*"}, map[string]any{"AWS": []string{"alice"}},
		map[string]any{"AWS": []string{"bob", "a*"}}}
	conditions := []map[string]any{
		{"StringEquals": map[string]any{"aws:username": "alice"}},
		{"StringLike": map[string]any{"s3:prefix": []string{"home/${aws:username}/*", "public/*"}}},
		{"IpAddress": map[string]any{"aws:SourceIp": "10.0.0.0/8"}},
		{"NotIpAddress": map[string]any{"aws:SourceIp": []string{"192.168.0.0/16", "2001:db8::/32"}}},
		{"Bool": map[string]any{"aws:SecureTransport": "true"}},
		{"DateGreaterThan": map[string]any{"aws:CurrentTime": "2024-01-01T00:00:00Z"}},
		{"NumericLessThan": map[string]any{"s3:max-keys": 500}},
		{"Null": map[string]any{"s3:prefix": true}},
		{"StringNotEquals": map[string]any{"aws:principaltype": "Anonymous"}},
		{"ForAnyValue:StringEquals": map[string]any{"s3:RequestObjectTagKeys": "project"}},
		{"StringEquals": map[string]any{"s3:versionid": "v1"}},
		{"StringEqualsIgnoreCase": map[string]any{"aws:username": "BOB"}},
		{"StringNotLike": map[string]any{"aws:UserAgent": "*curl*"}},
		{"StringEquals": map[string]any{"s3:ExistingObjectTag/project": "blue"}},
	}
	pick := func(pool []string, max int) []string {
		k := 1 + rng.Intn(max)
		out := []string{}
		for i := 0; i < k; i++ {
			s := pool[rng.Intn(len(pool))]
			dup := false
			for _, o := range out {
				dup = dup || o == s
			}
			if !dup {
				out = append(out, s)
			}
		}
		return out
	}
	docs := []string{}
	for i := 0; i < n; i++ {
		bucketPolicy := i%2 == 1
		var statements []map[string]any
		for j := 0; j < 1+rng.Intn(3); j++ {
			st := map[string]any{}
			if rng.Intn(3) == 0 {
				st["Effect"] = "Deny"
			} else {
				st["Effect"] = "Allow"
			}
			if rng.Intn(10) == 0 {
				st["NotAction"] = pick(actions, 2)
			} else {
				st["Action"] = pick(actions, 3)
			}
			if rng.Intn(10) == 0 {
				st["NotResource"] = pick(resources, 2)
			} else {
				st["Resource"] = pick(resources, 3)
			}
			if rng.Intn(2) == 0 {
				c := map[string]any{}
				for k := 0; k < 1+rng.Intn(2); k++ {
					for op, v := range conditions[rng.Intn(len(conditions))] {
						c[op] = v
					}
				}
				st["Condition"] = c
			}
			if bucketPolicy {
				st["Principal"] = principals[rng.Intn(len(principals))]
			}
			statements = append(statements, st)
		}
		b, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": statements})
		if err != nil {
			panic(err)
		}
		docs = append(docs, string(b))
	}
	return docs
}
