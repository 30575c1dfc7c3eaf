package main

import (
	"fmt"
	"strings"
)

type document struct {
	json    string
	differs string
}

// pol wraps statements into a versioned policy document.
func pol(statements ...string) string {
	return `{"Version":"2012-10-17","Statement":[` + strings.Join(statements, ",") + `]}`
}

// public turns an identity-policy statement into a bucket-policy one.
func public(statement string) string {
	return strings.Replace(statement, `{"Effect"`, `{"Principal":"*","Effect"`, 1)
}

func allow(action, resource string) string {
	return fmt.Sprintf(`{"Effect":"Allow","Action":%s,"Resource":%s}`, action, resource)
}

func allowIf(action, resource, cond string) string {
	return fmt.Sprintf(`{"Effect":"Allow","Action":%s,"Resource":%s,"Condition":%s}`, action, resource, cond)
}

func deny(action, resource string) string {
	return fmt.Sprintf(`{"Effect":"Deny","Action":%s,"Resource":%s}`, action, resource)
}

func denyIf(action, resource, cond string) string {
	return fmt.Sprintf(`{"Effect":"Deny","Action":%s,"Resource":%s,"Condition":%s}`, action, resource, cond)
}

// documents: hand-written cases, each also tried as a bucket policy with
// "Principal":"*" added to every statement.
func documents() []document {
	const (
		objects = `"arn:aws:s3:::mybucket/*"`
		bucket  = `"arn:aws:s3:::mybucket"`
		all     = `"arn:aws:s3:::*"`
		get     = `"s3:GetObject"`
		list    = `"s3:ListBucket"`
	)
	statements := []string{
		// Actions and resources.
		allow(get, objects),
		allow(`["s3:GetObject","s3:PutObject"]`, objects),
		allow(`"s3:*"`, bucket),
		allow(`"s3:*"`, all),
		allow(`"s3:*"`, `"*"`),
		allow(list, objects),
		allow(list, bucket),
		allow(`"s3:Get*"`, `["arn:aws:s3:::mybucket","arn:aws:s3:::mybucket/*"]`),
		allow(`"s3:*Object"`, objects),
		allow(`"s3:?etObject"`, objects),
		allow(`"s3:GetObjectVersion"`, objects),
		allow(get, `"arn:aws:s3:::mybucket/a/b"`),
		allow(get, `"arn:aws:s3:::mybucket/leading"`),
		allow(get, `"arn:aws:s3:::mybucket//leading"`),
		allow(get, `"arn:aws:s3:::*/photo.jpg"`),
		allow(get, `"arn:aws:s3:::my*"`),
		allow(get, `"arn:aws:s3:::mybucket/public/*"`),
		allow(get, `"arn:aws:s3:::mybucket/home/${aws:username}/*"`),
		allow(`["s3:GetObject","s3:PutObject"]`, `"arn:aws:s3:::mybucket/home/${aws:username}/*"`),
		allow(get, `"arn:aws:s3:::mybucket/jwt/${jwt:sub}/*"`),
		allow(get, `"arn:aws:s3:::mybucket/home/${aws:UserName}/*"`),
		allow(get, `"arn:aws:s3:::mybucket/home/${unknown}/*"`),
		allow(get, `"arn:aws:s3:::mybucket/é/*"`),
		allow(get, `"arn:aws:s3:::mybucket/?/?"`),
		allow(get, `"arn:aws:s3:::mybucket/??/??"`),
		`{"Effect":"Allow","NotAction":"s3:Delete*","Resource":"arn:aws:s3:::*"}`,
		`{"Effect":"Allow","Action":"s3:*","NotResource":"arn:aws:s3:::mybucket/private/*"}`,
		`{"Effect":"Deny","NotAction":["s3:GetObject","s3:ListBucket"],"Resource":"arn:aws:s3:::mybucket/*"}`,
		`{"Effect":"Deny","Action":"s3:*","NotResource":["arn:aws:s3:::mybucket","arn:aws:s3:::mybucket/*"]}`,
		// Conditions.
		allowIf(list, bucket, `{"StringLike":{"s3:prefix":["home/${aws:username}/*","public/*"]}}`),
		allowIf(list, bucket, `{"StringEquals":{"s3:prefix":"home/${aws:username}/"}}`),
		allowIf(list, bucket, `{"StringEquals":{"s3:prefix":["","home/"],"s3:delimiter":"/"}}`),
		allowIf(list, bucket, `{"Null":{"s3:prefix":"true"}}`),
		allowIf(list, bucket, `{"Null":{"s3:prefix":false}}`),
		allowIf(list, bucket, `{"NumericLessThanEquals":{"s3:max-keys":"100"}}`),
		allowIf(list, bucket, `{"NumericGreaterThan":{"s3:max-keys":100}}`),
		allowIf(list, bucket, `{"NumericGreaterThanIfExists":{"s3:max-keys":100}}`),
		allowIf(list, bucket, `{"NumericNotEquals":{"s3:max-keys":"1000"}}`),
		allowIf(list, bucket, `{"StringNotLike":{"s3:prefix":"home/bob/*"}}`),
		allowIf(list, bucket, `{"ForAnyValue:StringLike":{"s3:prefix":"home/*"}}`),
		allowIf(list, bucket, `{"ForAllValues:StringLike":{"s3:prefix":"home/*"}}`),
		allowIf(`"s3:ListBucketVersions"`, bucket, `{"StringLike":{"s3:prefix":"home/${aws:username}/*"}}`),
		allowIf(get, objects, `{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`),
		allowIf(get, objects, `{"IpAddress":{"aws:SourceIp":["172.16.0.0/12","2001:db8::/32"]}}`),
		allowIf(get, objects, `{"IpAddress":{"aws:SourceIp":"10.1.2.3"}}`),
		allowIf(get, objects, `{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`),
		denyIf(`"s3:*"`, all, `{"NotIpAddress":{"aws:SourceIp":["10.0.0.0/8","::ffff:0:0/96"]}}`),
		denyIf(`"s3:*"`, all, `{"Bool":{"aws:SecureTransport":"false"}}`),
		denyIf(`"s3:*"`, all, `{"Bool":{"aws:SecureTransport":false}}`),
		allowIf(get, objects, `{"Bool":{"aws:SecureTransport":true}}`),
		allowIf(get, objects, `{"DateLessThan":{"aws:CurrentTime":"2024-06-01T12:00:00Z"}}`),
		allowIf(get, objects, `{"DateLessThanEquals":{"aws:CurrentTime":"2024-06-01T14:00:00+02:00"}}`),
		allowIf(get, objects, `{"DateGreaterThan":{"aws:CurrentTime":"2020-01-01T00:00:00Z"},"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}`),
		allowIf(get, objects, `{"DateEquals":{"aws:CurrentTime":"2024-06-01T12:00:00.000Z"}}`),
		allowIf(get, objects, `{"DateNotEquals":{"aws:CurrentTime":"2024-06-01T12:00:00Z"}}`),
		allowIf(get, objects, `{"DateGreaterThanEquals":{"aws:CurrentTime":"2024-06-01T12:00:00Z"}}`),
		allowIf(get, objects, `{"NumericLessThan":{"aws:EpochTime":1800000000}}`),
		allowIf(get, objects, `{"StringEquals":{"aws:username":["alice","carol"]}}`),
		allowIf(get, objects, `{"StringNotEquals":{"aws:username":"alice"}}`),
		allowIf(get, objects, `{"StringEqualsIgnoreCase":{"aws:username":"ALICE"}}`),
		allowIf(get, objects, `{"StringNotEqualsIgnoreCase":{"aws:username":"ALICE"}}`),
		allowIf(get, objects, `{"StringLike":{"aws:UserAgent":"*minio-go*"}}`),
		allowIf(get, objects, `{"StringEquals":{"aws:Referer":"https://example.com/"}}`),
		allowIf(get, objects, `{"StringEquals":{"aws:principaltype":"Anonymous"}}`),
		allowIf(get, objects, `{"StringEquals":{"aws:userid":"${aws:username}"}}`),
		allowIf(get, objects, `{"BinaryEquals":{"aws:username":"YWxpY2U="}}`),
		allowIf(get, objects, `{"StringEquals":{"s3:x-amz-server-side-encryption":"AES256"}}`),
		allowIf(`"s3:PutObject"`, objects, `{"StringEquals":{"s3:x-amz-server-side-encryption":"AES256"}}`),
		allowIf(`"s3:PutObject"`, objects, `{"Null":{"s3:x-amz-server-side-encryption":"false"}}`),
		allowIf(`"s3:PutObject"`, objects, `{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["project","env"]}}`),
		allowIf(`"s3:PutObject"`, objects, `{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["env"]}}`),
		allowIf(`"s3:PutObject"`, objects, `{"ForAllValues:StringNotEquals":{"s3:RequestObjectTagKeys":["project"]}}`),
		allowIf(`"s3:PutObject"`, objects, `{"ForAnyValue:StringNotEquals":{"s3:RequestObjectTagKeys":["project"]}}`),
		allowIf(`"s3:PutObject"`, objects, `{"StringEquals":{"s3:RequestObjectTag/project":"blue"}}`),
		allowIf(`"s3:PutObject"`, objects, `{"StringLike":{"s3:x-amz-copy-source":"/srcbucket/*"}}`),
		allowIf(`"s3:PutObject"`, objects, `{"StringEquals":{"s3:x-amz-storage-class":["STANDARD","REDUCED_REDUNDANCY"]}}`),
		allowIf(`"s3:GetObjectTagging"`, objects, `{"StringEquals":{"s3:ExistingObjectTag/project":"blue"}}`),
		allowIf(`"s3:PutObjectRetention"`, objects, `{"NumericLessThanEquals":{"s3:object-lock-remaining-retention-days":"30"},"StringEquals":{"s3:object-lock-mode":"GOVERNANCE"}}`),
		allowIf(`"s3:PutObjectRetention"`, objects, `{"DateLessThan":{"s3:object-lock-retain-until-date":"2025-01-01T00:00:00Z"}}`),
		allowIf(`"s3:DeleteObject"`, objects, `{"StringEquals":{"s3:versionid":"v1"}}`),
		allowIf(`"s3:CreateBucket"`, `"arn:aws:s3:::*"`, `{"StringEquals":{"s3:LocationConstraint":"us-east-1"}}`),
		allowIf(`"s3:*"`, all, `{"StringEquals":{"s3:signatureversion":"AWS4-HMAC-SHA256","s3:authType":"REST-HEADER"}}`),
		allowIf(get, objects, `{"StringEquals":{"jwt:sub":"sub-123"}}`),
		allowIf(get, objects, `{"StringEquals":{"aws:username":"alice"},"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`),
	}
	out := []document{}
	for _, s := range statements {
		out = append(out, document{json: pol(s)})
		out = append(out, document{json: pol(public(s))})
	}
	combos := [][]string{
		{allow(`"s3:*"`, all), deny(`"s3:DeleteObject"`, all)},
		{allow(get, objects), deny(get, `"arn:aws:s3:::mybucket/private/*"`)},
		{allow(list, bucket), allow(get, objects), allow(`"s3:PutObject"`, `"arn:aws:s3:::mybucket/uploads/*"`)},
		{deny(`"s3:*"`, `"arn:aws:s3:::other/*"`), allow(`"s3:*"`, all)},
		{allowIf(get, objects, `{"StringEquals":{"aws:username":"bob"}}`), denyIf(get, objects, `{"StringEquals":{"aws:username":"alice"}}`)},
	}
	for _, c := range combos {
		out = append(out, document{json: pol(c...)})
		pub := []string{}
		for _, s := range c {
			pub = append(pub, public(s))
		}
		out = append(out, document{json: pol(pub...)})
	}
	// Bucket policies with particular principals.
	for _, p := range []string{`"*"`, `{"AWS":"*"}`, `{"AWS":["alice"]}`, `{"AWS":["bob","a*"]}`, `{"AWS":"?"}`, `{"AWS":["arn:aws:iam::123456789012:user/alice"]}`, `{"AWS":""}`} {
		out = append(out, document{json: pol(`{"Effect":"Allow","Principal":` + p + `,"Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::mybucket","arn:aws:s3:::mybucket/*"]}`)})
	}
	// Identity-policy statement families.
	out = append(out,
		document{json: pol(`{"Effect":"Allow","Action":"admin:*"}`)},
		document{json: pol(`{"Effect":"Allow","Action":["admin:ServerInfo","admin:CreateUser"],"Resource":"arn:aws:s3:::nothing"}`)},
		document{json: pol(`{"Effect":"Allow","Action":"admin:*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`)},
		document{json: pol(`{"Effect":"Deny","Action":"admin:CreateUser"}`, `{"Effect":"Allow","Action":"admin:*"}`)},
		document{json: pol(`{"Effect":"Allow","Action":"kms:*"}`)},
		document{json: pol(`{"Effect":"Allow","Action":"kms:KeyStatus","Resource":"arn:minio:kms:::mykey"}`)},
		document{json: pol(`{"Effect":"Allow","Action":"kms:KeyStatus","Resource":"arn:minio:kms:::my*"}`)},
		document{json: pol(`{"Effect":"Allow","Action":"kms:*","Resource":"*"}`)},
		document{json: pol(`{"Effect":"Allow","Action":"sts:AssumeRoleWithWebIdentity","Condition":{"NumericLessThan":{"sts:DurationSeconds":3600}}}`)},
		document{json: pol(`{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::other/*"}`)},
		document{json: pol(`{"Effect":"Allow","Action":"*"}`)},
		document{json: pol(`{"Effect":"Deny","Action":"*","Resource":"arn:aws:s3:::mybucket/*"}`, allow(`"s3:*"`, all))},
	)
	// Validation: each of these is refused by one parser or both.
	for _, d := range []string{
		`{"Version":"2012-10-17","Statement":[]}`,
		`{"Statement":[` + allow(get, objects) + `]}`,
		`{"Statement":[` + public(allow(get, objects)) + `]}`,
		`{"Version":"","Statement":[` + allow(get, objects) + `]}`,
		`{"Version":"2013-01-01","Statement":[` + allow(get, objects) + `]}`,
		`{"Version":"2012-10-17","Id":"my-id","Statement":[` + allow(get, objects) + `]}`,
		`{"version":"2012-10-17","statement":[{"effect":"Allow","action":"s3:GetObject","resource":"arn:aws:s3:::mybucket/*","sid":"lower"}]}`,
		pol(`{"Sid":"s1","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*"}`),
		pol(`{"Effect":"allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*"}`),
		pol(`{"Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*"}`),
		pol(allow(`"s3:Bogus"`, objects)),
		pol(public(allow(`"s3:Bogus"`, objects))),
		pol(public(allow(`"s3:Bogus"`, bucket))),
		pol(allow(`[]`, objects)),
		pol(`{"Effect":"Allow","Resource":"arn:aws:s3:::mybucket/*"}`),
		pol(`{"Effect":"Allow","Action":"s3:GetObject","NotAction":"s3:PutObject","Resource":"arn:aws:s3:::mybucket/*"}`),
		pol(`{"Effect":"Allow","Action":"s3:GetObject"}`),
		pol(allow(get, `[]`)),
		pol(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*","NotResource":"arn:aws:s3:::mybucket/x"}`),
		pol(allow(get, `"arn:aws:s3:::/mybucket"`)),
		pol(allow(get, `"mybucket/*"`)),
		pol(allow(get, `"arn:aws:s3:::"`)),
		pol(allow(get, `"*mybucket/*"`)),
		pol(public(allow(get, `"*mybucket/*"`))),
		pol(allow(get, `"arn:minio:kms:::key"`)),
		pol(allow(`["*","s3:GetObject"]`, objects)),
		pol(allow(`["admin:ServerInfo","s3:GetObject"]`, objects)),
		pol(allow(`"admin:ForceUnlock"`, objects)),
		pol(allow(`"admin:Server*"`, objects)),
		pol(allow(`"kms:CreateKey"`, objects)),
		pol(allow(`"kms:Nope"`, `"arn:minio:kms:::key"`)),
		pol(allow(`"kms:CreateKey"`, `"arn:minio:kms:::a.b"`)),
		pol(`{"Effect":"Allow","Action":"admin:*","Condition":{"StringEquals":{"s3:prefix":"x"}}}`),
		pol(`{"Effect":"Allow","Action":"*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`),
		pol(public(`{"Effect":"Allow","Action":"*","Resource":"arn:aws:s3:::mybucket/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`)),
		pol(allowIf(get, objects, `{"StringEquals":{"s3:prefix":"x"}}`)),
		pol(public(allowIf(get, objects, `{"StringEquals":{"s3:prefix":"x"}}`))),
		pol(allowIf(`["s3:GetObject","s3:ListBucket"]`, all, `{"StringEquals":{"s3:prefix":"x"}}`)),
		pol(allowIf(`"s3:Get*"`, objects, `{"StringEquals":{"s3:ExistingObjectTag/x":"y"}}`)),
		pol(allowIf(`"s3:GetBucket*"`, all, `{"StringEquals":{"s3:ExistingObjectTag/x":"y"}}`)),
		pol(allowIf(get, objects, `{}`)),
		pol(allowIf(get, objects, `{"StringEquals":{}}`)),
		pol(allowIf(get, objects, `{"StringEquals":{"aws:nope":"x"}}`)),
		pol(allowIf(get, objects, `{"Bogus":{"aws:username":"x"}}`)),
		pol(allowIf(get, objects, `{"Foo:StringEquals":{"aws:username":"x"}}`)),
		pol(allowIf(get, objects, `{"ForAllValues:StringEquals":{"aws:username":"x"}}`)),
		pol(allowIf(get, objects, `{"StringEquals":{"aws:username":["x","x"]}}`)),
		pol(allowIf(get, objects, `{"StringEquals":{"aws:username":[]}}`)),
		pol(allowIf(get, objects, `{"StringEquals":{"aws:username":5}}`)),
		pol(allowIf(get, objects, `{"StringEquals":{"aws:username":["5",5]}}`)),
		pol(allowIf(get, objects, `{"Bool":{"aws:username":"true"}}`)),
		pol(allowIf(get, objects, `{"Bool":{"aws:SecureTransport":"yes"}}`)),
		pol(allowIf(get, objects, `{"Bool":{"aws:SecureTransport":["true","false"]}}`)),
		pol(allowIf(get, objects, `{"IpAddress":{"aws:SourceIp":"10.0.0/8"}}`)),
		pol(allowIf(get, objects, `{"IpAddress":{"aws:username":"10.0.0.0/8"}}`)),
		pol(allowIf(get, objects, `{"IpAddress":{"aws:SourceIp":1}}`)),
		pol(allowIf(get, objects, `{"NumericEquals":{"aws:EpochTime":["1","2"]}}`)),
		pol(allowIf(get, objects, `{"NumericEquals":{"aws:EpochTime":"1.5"}}`)),
		pol(allowIf(get, objects, `{"NumericEquals":{"aws:EpochTime":true}}`)),
		pol(allowIf(get, objects, `{"DateEquals":{"aws:CurrentTime":"2020-01-01"}}`)),
		pol(allowIf(get, objects, `{"DateEquals":{"aws:CurrentTime":1}}`)),
		pol(allowIf(get, objects, `{"Null":{"aws:username":"maybe"}}`)),
		pol(allowIf(get, objects, `{"Null":{"aws:username":1}}`)),
		pol(allowIf(get, objects, `{"BinaryEquals":{"aws:username":"!!"}}`)),
		pol(allowIf(get, objects, `{"StringEquals":{"s3:x-amz-server-side-encryption":"AES"}}`)),
		pol(allowIf(get, objects, `{"StringLike":{"s3:x-amz-server-side-encryption":"AES*"}}`)),
		pol(allowIf(`"s3:PutObject"`, objects, `{"StringEquals":{"s3:x-amz-metadata-directive":"MOVE"}}`)),
		pol(allowIf(`"s3:PutObject"`, objects, `{"StringEquals":{"s3:x-amz-copy-source":"nobucket"}}`)),
		pol(allowIf(`"s3:PutObject"`, objects, `{"StringLike":{"s3:x-amz-copy-source":"ab/key"}}`)),
		pol(allowIf(`"s3:PutObject"`, objects, `{"StringEquals":{"s3:x-amz-content-sha256":""}}`)),
		pol(allowIf(`"s3:PutObject"`, objects, `{"StringEquals":{"s3:x-amz-server-side-encryption-customer-algorithm":"AES256"}}`)),
		pol(allowIf(`"s3:PutObject"`, objects, `{"BinaryEquals":{"s3:x-amz-server-side-encryption":"QUVTMjU2"}}`)),
		pol(`{"Effect":"Allow","Principal":"alice","Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*"}`),
		pol(`{"Effect":"Allow","Principal":{"AWS":[]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*"}`),
		pol(public(allow(get, `"arn:aws:s3:::other/*"`))),
		pol(public(allow(get, `"arn:aws:s3:::mybucket"`))),
		pol(public(allow(list, `"arn:aws:s3:::mybucket/x"`))),
		pol(public(allow(`"s3:*"`, bucket))),
		pol(public(allow(`"s3:*"`, `"arn:aws:s3:::myb?cket/*"`))),
		pol(public(allow(`"s3:*"`, `"arn:aws:s3:::mybucket-2/*"`))),
		pol(public(allow(`"s3:GetBucketLocation"`, `"arn:aws:s3:::*"`))),
		pol(public(allow(`"admin:ServerInfo"`, bucket))),
		pol(public(`{"Effect":"Allow","NotAction":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*"}`)),
	} {
		out = append(out, document{json: d})
	}
	// What the Rust crate reads differently on purpose.
	out = append(out,
		document{json: pol(allow(`"s3:getobject"`, objects)), differs: "action names without case"},
		document{json: pol(allowIf(get, objects, `{"StringEquals":{"aws:sourceip":"x"}}`)), differs: "condition keys without case"},
		document{json: `{"Version":"2008-10-17","Statement":[` + allow(get, objects) + `]}`, differs: "version 2008-10-17"},
		document{json: `{"Version":"2012-10-17","Statement":` + allow(get, objects) + `}`, differs: "a single statement object"},
		document{json: pol(allowIf(get, objects, `{"StringEqualsIfExists":{"aws:username":"alice"}}`)), differs: "IfExists on every operator"},
		document{json: pol(allowIf(get, objects, `{"ArnLike":{"aws:username":"arn:*:*:*:*:*"}}`)), differs: "Arn operators"},
		document{json: pol(`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*","Unknown":1}`), differs: "unknown fields refused"},
		document{json: pol(`{"Effect":"Allow","Action":"s3:GetObject","action":"s3:PutObject","Resource":"arn:aws:s3:::mybucket/*"}`), differs: "repeated fields refused"},
		document{json: pol(allowIf(get, objects, `{"Null":{"aws:username":null}}`)), differs: "null values refused"},
		document{json: pol(public(allow(`["s3:GetObject",5]`, `["arn:aws:s3:::mybucket","arn:aws:s3:::mybucket/*"]`))), differs: "non-string actions refused"},
		document{json: pol(`{"Effect":"Allow","Principal":{"AWS":"*","Service":"x"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::mybucket/*"}`), differs: "principals other than AWS refused"},
	)
	return out
}
