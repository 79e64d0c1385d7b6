// Command go-example is a locktorture client adapter for a lock type of
// your own, written in Go (docs/client-protocol.md). It does not import
// the harness: copy this directory into your project, replace MyLock with
// your lock, build it, and run
//
//	locktorture run --scenario kleppmann-pause --exec './go-example'
//
// The harness starts one copy per simulated client and speaks JSON lines
// with it: requests on stdin, replies on stdout; stderr goes to
// client-N.log in the run's store.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// MyLock stands for the lock you want tortured: here a single-Redis lock
// (SET NX PX with a random token, released by compare-and-delete).
type MyLock struct {
	rdb *redis.Client
	ttl time.Duration
}

// ErrBusy: someone else holds the lock.
var ErrBusy = errors.New("busy")

// ErrNotHeld: the lock was no longer ours.
var ErrNotHeld = errors.New("not held")

var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// Lock takes key once; the token proves ownership.
func (l *MyLock) Lock(ctx context.Context, key string) (token string, err error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token = hex.EncodeToString(b)
	ok, err := l.rdb.SetNX(ctx, "mylock:"+key, token, l.ttl).Result()
	if err != nil {
		return "", err
	}
	if !ok {
		return "", ErrBusy
	}
	return token, nil
}

// Unlock gives key back if it is still ours.
func (l *MyLock) Unlock(ctx context.Context, key, token string) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{"mylock:" + key}, token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// request is what the harness sends.
type request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Key       string `json:"key"`
	Process   int    `json:"process"`
	TTLMS     int64  `json:"ttl_ms"`
	TimeoutMS int64  `json:"timeout_ms"`
	Servers   struct {
		Redis []string `json:"redis"`
	} `json:"servers"`
	// Auth is present when the servers ask for credentials
	// (docs/client-protocol.md#credentials): auth.redis is one object for
	// every server (or a list, one per server; this lock uses the first).
	Auth struct {
		Redis json.RawMessage `json:"redis"`
	} `json:"auth"`
}

// credentials are one server's, as auth.redis gives them.
type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
	TLS      *struct {
		CA                 string `json:"ca"`
		Cert               string `json:"cert"`
		Key                string `json:"key"`
		ServerName         string `json:"server_name"`
		InsecureSkipVerify bool   `json:"insecure_skip_verify"`
	} `json:"tls"`
}

// redisAuth sets o's credentials from auth.redis (an object, or a list
// whose first entry is this lock's server).
func redisAuth(o *redis.Options, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c credentials
	if raw[0] == '[' {
		var l []*credentials
		if err := json.Unmarshal(raw, &l); err != nil || len(l) == 0 || l[0] == nil {
			return err
		}
		c = *l[0]
	} else if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	o.Username, o.Password = c.Username, c.Password
	if t := c.TLS; t != nil {
		// server_name: we dial our link, the certificate names the server.
		cfg := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
		if t.CA != "" {
			pem, err := os.ReadFile(t.CA)
			if err != nil {
				return err
			}
			cfg.RootCAs = x509.NewCertPool()
			cfg.RootCAs.AppendCertsFromPEM(pem)
		}
		if t.Cert != "" {
			pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
			if err != nil {
				return err
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		o.TLSConfig = cfg
	}
	return nil
}

// reply is what we answer: type ok, fail (certainly did not happen) or
// info (may have happened: a timeout).
type reply struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	Error   string `json:"error,omitempty"`
	LeaseMS *int64 `json:"lease_ms,omitempty"`
}

func main() {
	log.SetFlags(log.Lmicroseconds) // stderr: client-N.log
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout) // one object per line
	var lock *MyLock
	var timeout time.Duration
	tokens := map[string]string{}
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			log.Fatalf("bad request: %v", err)
		}
		rep := reply{ID: req.ID, Type: "ok"}
		switch req.Op {
		case "open":
			if len(req.Servers.Redis) == 0 {
				rep = reply{ID: req.ID, Type: "fail", Error: "no redis server given"}
				break
			}
			timeout = time.Duration(req.TimeoutMS) * time.Millisecond
			o := &redis.Options{
				Addr: req.Servers.Redis[0], MaxRetries: -1, ContextTimeoutEnabled: true,
				DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
			}
			if err := redisAuth(o, req.Auth.Redis); err != nil {
				rep = reply{ID: req.ID, Type: "fail", Error: "auth: " + err.Error()}
				break
			}
			lock = &MyLock{ttl: time.Duration(req.TTLMS) * time.Millisecond, rdb: redis.NewClient(o)}
			log.Printf("open: process %d, redis %s", req.Process, req.Servers.Redis[0])
		case "acquire":
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			start := time.Now()
			token, err := lock.Lock(ctx, req.Key)
			cancel()
			switch {
			case errors.Is(err, ErrBusy):
				rep.Type, rep.Error = "fail", "busy"
			case err != nil:
				rep.Type, rep.Error = "info", err.Error() // it may have been taken
			default:
				tokens[req.Key] = token
				lease := (lock.ttl - time.Since(start)).Milliseconds()
				rep.LeaseMS = &lease
			}
		case "release":
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err := lock.Unlock(ctx, req.Key, tokens[req.Key])
			cancel()
			delete(tokens, req.Key)
			switch {
			case errors.Is(err, ErrNotHeld):
				rep.Type, rep.Error = "fail", "not held"
			case err != nil:
				rep.Type, rep.Error = "info", err.Error()
			}
		case "close":
			_ = out.Encode(rep)
			return
		default:
			rep.Type, rep.Error = "fail", fmt.Sprintf("unknown op %q", req.Op)
		}
		if err := out.Encode(rep); err != nil {
			log.Fatalf("stdout: %v", err)
		}
	}
}
