/*
 * locktorture adapter for Apache Curator's InterProcessMutex (Debian
 * libcurator-recipes-java) over ZooKeeper, speaking the client protocol
 * (docs/client-protocol.md) on stdin and stdout.
 *
 * As Curator's docs show (https://curator.apache.org/docs/getting-started,
 * https://curator.apache.org/docs/recipes-shared-reentrant-lock):
 *
 *     CuratorFramework client = CuratorFrameworkFactory.newClient(connectString, retryPolicy);
 *     client.start();
 *     InterProcessMutex lock = new InterProcessMutex(client, lockPath);
 *     if (lock.acquire(maxWait, waitUnit)) { try { ... } finally { lock.release(); } }
 *
 * one CuratorFramework (one ZooKeeper session) per client process, one
 * InterProcessMutex per key kept across acquisitions ("A InterProcessMutex
 * instance is reusable ... Re-use a single instance"), acquire(0 ms) to try
 * once (Curator creates its ephemeral sequential node, and deletes it again
 * when another's comes first), release() to give it back. The client is
 * built with CuratorFrameworkFactory.builder(), which newClient is a
 * shorthand for: the builder also takes the digest user the harness's
 * ZooKeeper asks for (authorization) and an ACL for that user on every node
 * (aclProvider: ZooKeeper's CREATOR_ALL_ACL). The retry policy is the one
 * the docs show, ExponentialBackoffRetry, made short (50ms, one retry), and
 * connectionTimeoutMs (how long an operation waits for a connection) is 70%
 * of timeout_ms: the protocol asks for requests bounded below timeout_ms.
 * (A policy that refuses by elapsed time, RetryUntilElapsed, is not used:
 * with the link cut past connectionTimeoutMs, the background delete of a
 * lock node whose create went unanswered re-runs itself at once each time
 * the policy refuses, until the thread's stack overflows: CURATOR-106.)
 *
 * The recipe's doc says: "It is strongly recommended that you add a
 * ConnectionStateListener and watch for SUSPENDED and LOST state changes.
 * If a SUSPENDED state is reported you cannot be certain that you still
 * hold the lock unless you subsequently receive a RECONNECTED state. If a
 * LOST state is reported it is certain that you no longer hold the lock."
 * The adapter does: on SUSPENDED and on LOST it tells the harness each lock
 * it holds is lost (a "lost" event), as an application that stops its work
 * then would.
 *
 * Lease: the session timeout ZooKeeper negotiated (asked for: ttl_ms) less
 * what the acquire took. No fence (the recipe exposes none).
 *
 * Options (the open request's "options", backend_options: {curator: ...}):
 * wait_ms, how long each acquire waits in line for the lock, as
 * acquire(maxWait, unit) does (its node stays, watching the one before it;
 * at the end of the wait Curator deletes it and the answer is fail, busy).
 * 0, the default, tries once. It is held below 70% of timeout_ms, so that
 * the answer comes before the harness gives up on the request.
 *
 * InterProcessMutex belongs to the thread that acquired it (release() from
 * another thread throws IllegalMonitorStateException): each key's calls run
 * in a worker thread of that key's own (open's in one of its own), as an
 * application's thread holds its lock, and otherwise as
 * clients/python/lt_protocol.py runs them: requests are read by a thread of
 * their own and stamped when they arrive; a call that has not returned by
 * 80% of timeout_ms is answered info, and a grant it returns later is given
 * back at once; a request still queued behind such a call (on its key) is
 * answered info and never made. One thread per key, not one for all: a
 * Curator call made while the link is cut waits for ZooKeeper's client to
 * reconnect (the ZooKeeper client queues it), seconds, and must not hold
 * up the calls on other keys after the link heals.
 *
 * Run it with clients/java/curator_lock.sh, which compiles this file once
 * (a cache keyed by its hash) against Debian's jars in /usr/share/java and
 * starts it; a missing JDK or Curator is one line on stderr and exit 69:
 *   locktorture run --backend curator --scenario baseline
 *   locktorture client-check --exec '/bin/sh clients/java/curator_lock.sh' --exec-servers zookeeper
 */

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;

public final class CuratorLock {
    static final String ROOT = "/locktorture-curator";

    // ---- the lock ----------------------------------------------------------

    CuratorFramework client;
    int ttlMs = 1000;
    volatile long timeoutMs = 500;
    long waitMs; // options.wait_ms: how long an acquire waits in line (0: try once)
    final Map<String, InterProcessMutex> mutexes = new ConcurrentHashMap<>(); // key -> mutex, kept across acquisitions
    final Set<String> held = ConcurrentHashMap.newKeySet(); // keys this client holds
    final Set<String> lostSent = ConcurrentHashMap.newKeySet(); // held keys already said lost

    Map<String, Object> open(Map<String, Object> req) throws Exception {
        List<String> addrs = new ArrayList<>();
        Object zk = map(req.get("servers")).get("zookeeper");
        if (zk instanceof List) {
            for (Object a : (List<?>) zk) {
                addrs.add(String.valueOf(a));
            }
        }
        if (addrs.isEmpty()) {
            return reply("fail", "error", "no zookeeper server given (exec.servers: [zookeeper])");
        }
        ttlMs = (int) num(req.get("ttl_ms"), 1000);
        timeoutMs = (long) num(req.get("timeout_ms"), 500);
        int bound = Math.max(50, (int) (num(req.get("timeout_ms"), 500) * 0.7));
        waitMs = Math.max(0, Math.min((long) num(map(req.get("options")).get("wait_ms"), 0), bound));
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
            .connectString(String.join(",", addrs))
            .sessionTimeoutMs(ttlMs)
            .connectionTimeoutMs(bound)
            .retryPolicy(new ExponentialBackoffRetry(50, 1));
        Map<String, Object> auth = authOf(req, "zookeeper");
        Object secret = auth.get("auth");
        if (secret != null) {
            Object scheme = auth.get("scheme");
            b.authorization(scheme == null ? "digest" : String.valueOf(scheme), String.valueOf(secret).getBytes(StandardCharsets.UTF_8));
            b.aclProvider(new ACLProvider() { // our znodes: only our user
                public List<ACL> getDefaultAcl() {
                    return ZooDefs.Ids.CREATOR_ALL_ACL;
                }

                public List<ACL> getAclForPath(String path) {
                    return ZooDefs.Ids.CREATOR_ALL_ACL;
                }
            });
        }
        client = b.build();
        client.getConnectionStateListenable().addListener(new ConnectionStateListener() {
            public void stateChanged(CuratorFramework c, ConnectionState s) {
                state(s);
            }
        });
        client.start();
        if (!client.blockUntilConnected(8, TimeUnit.SECONDS)) {
            return reply("fail", "error", "not connected to " + String.join(",", addrs) + " within 8s");
        }
        // A first acquire loads much of Curator's and ZooKeeper's code (and
        // makes the root's container node): done here, on a lock of this
        // process's own, so that the harness's first acquire is not slowed
        // past timeout_ms by it.
        InterProcessMutex warm = new InterProcessMutex(client, ROOT + "/.open-p" + req.get("process"));
        if (warm.acquire(0, TimeUnit.MILLISECONDS)) {
            warm.release();
        }
        log("open: process " + req.get("process") + ", zookeeper " + String.join(",", addrs) + ", session timeout "
            + sessionMs() + "ms (asked " + ttlMs + "ms), acquire waits " + waitMs + "ms, curator " + curatorVersion() + ", java " + System.getProperty("java.version"));
        Map<String, Object> r = reply("ok");
        r.put("abilities", new ArrayList<Object>());
        return r;
    }

    // Called from Curator's own event thread: only say it, never block.
    void state(ConnectionState s) {
        log("connection state: " + s);
        if (s == ConnectionState.SUSPENDED || s == ConnectionState.LOST) {
            for (String key : held) {
                if (lostSent.add(key)) {
                    lost(key);
                }
            }
        }
    }

    int sessionMs() {
        int n = client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
        return n > 0 ? n : ttlMs;
    }

    InterProcessMutex mutex(String key) {
        return mutexes.computeIfAbsent(key, k -> new InterProcessMutex(client, ROOT + "/" + k));
    }

    Map<String, Object> acquire(String key) throws Exception {
        InterProcessMutex m = mutex(key);
        long start = System.nanoTime();
        if (m.acquire(waitMs, TimeUnit.MILLISECONDS)) {
            lostSent.remove(key);
            held.add(key);
            long took = (System.nanoTime() - start) / 1_000_000;
            return reply("ok", "lease_ms", Math.max(sessionMs() - took, 0));
        }
        // false: another's node comes first (still, after wait_ms), and ours
        // was deleted again (a delete that failed would have thrown: info).
        return reply("fail", "error", "busy");
    }

    Map<String, Object> release(String key) throws Exception {
        if (!held.remove(key)) {
            return reply("fail", "error", "not held");
        }
        lostSent.remove(key);
        try {
            mutex(key).release();
        } catch (IllegalMonitorStateException e) {
            return reply("fail", "error", "not held");
        }
        return reply("ok");
    }

    void giveBack(String key) throws Exception {
        held.remove(key);
        lostSent.remove(key);
        mutex(key).release();
    }

    void close() {
        client.close();
    }

    static String curatorVersion() {
        try (InputStream in = InterProcessMutex.class.getResourceAsStream("/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                return p.getProperty("version", "?");
            }
        } catch (Exception e) {
            // unknown
        }
        return "?";
    }

    // ---- the protocol loop (clients/python/lt_protocol.py's, in Java) ------

    static PrintStream out;

    static synchronized void send(Map<String, Object> msg) {
        out.print(Json.write(msg) + "\n");
        out.flush();
    }

    static final java.time.format.DateTimeFormatter CLOCK = java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss.SSS");

    static void log(String s) {
        System.err.println(java.time.LocalTime.now().format(CLOCK) + " " + s);
        System.err.flush();
    }

    static void lost(String key) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", "lost");
        m.put("key", key);
        send(m);
    }

    static Map<String, Object> reply(String type, Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        return o instanceof Map ? (Map<String, Object>) o : new LinkedHashMap<>();
    }

    static double num(Object o, double dflt) {
        return o instanceof Number ? ((Number) o).doubleValue() : dflt;
    }

    /** The open request's auth for servers of kind (one object, or a list: the first), or {}. */
    static Map<String, Object> authOf(Map<String, Object> req, String kind) {
        Object a = map(req.get("auth")).get(kind);
        if (a instanceof List) {
            List<?> l = (List<?>) a;
            a = l.isEmpty() ? null : l.get(0);
        }
        return map(a);
    }

    /** "acquire k0", "open": a request, for the log. */
    static String what(Map<String, Object> req) {
        Object key = req.get("key");
        return req.get("op") + (key == null ? "" : " " + key);
    }

    static final class Job {
        final Map<String, Object> req;
        String state = "queued"; // queued, running, done, cancelled
        boolean abandoned;
        Map<String, Object> reply;
        final CountDownLatch done = new CountDownLatch(1);

        Job(Map<String, Object> req) {
            this.req = req;
        }
    }

    static final Object EOF = new Object();

    Map<String, Object> call(Map<String, Object> req) throws Exception {
        Object op = req.get("op");
        if ("open".equals(op)) {
            return open(req);
        }
        if ("acquire".equals(op)) {
            return acquire(String.valueOf(req.get("key")));
        }
        if ("release".equals(op)) {
            return release(String.valueOf(req.get("key")));
        }
        return reply("fail", "error", "unknown op " + op);
    }

    /** The worker of key's calls ("" for open's), started on first use. */
    LinkedBlockingQueue<Job> queue(String key, Object mu) {
        return workers.computeIfAbsent(key, k -> {
            LinkedBlockingQueue<Job> q = new LinkedBlockingQueue<>();
            Thread w = new Thread(() -> worker(q, mu), k.isEmpty() ? "curator-open" : "curator-" + k);
            w.setDaemon(true);
            w.start();
            return q;
        });
    }

    final Map<String, LinkedBlockingQueue<Job>> workers = new ConcurrentHashMap<>();

    void worker(LinkedBlockingQueue<Job> jobs, Object mu) {
        while (true) {
            Job job;
            try {
                job = jobs.take();
            } catch (InterruptedException e) {
                return;
            }
            synchronized (mu) {
                if (job.state.equals("cancelled")) {
                    continue;
                }
                job.state = "running";
            }
            Map<String, Object> r;
            long began = System.nanoTime();
            try {
                r = call(job.req);
            } catch (Throwable e) { // the library threw: the request may have happened
                log(what(job.req) + ": " + e);
                // open: not connected, certainly (the run stops, naming it).
                r = reply("open".equals(job.req.get("op")) ? "fail" : "info", "error", String.valueOf(e));
            }
            long took = (System.nanoTime() - began) / 1_000_000;
            if (took >= timeoutMs * 8 / 10) {
                log(what(job.req) + ": the library took " + took + "ms (" + r.get("type") + ")");
            }
            boolean abandoned;
            synchronized (mu) {
                job.reply = r;
                job.state = "done";
                abandoned = job.abandoned;
                job.done.countDown();
            }
            if (abandoned && "acquire".equals(job.req.get("op")) && "ok".equals(r.get("type"))) {
                String key = String.valueOf(job.req.get("key"));
                try {
                    giveBack(key);
                    log("acquire " + key + ": granted after the harness gave up; given back");
                } catch (Throwable e) {
                    log("acquire " + key + ": granted after the harness gave up; giving it back failed: " + e);
                }
            }
        }
    }

    /** Closes the library (bounded: a library that waits on a cut link must not keep the process) and exits. */
    void exit() {
        Thread t = new Thread(() -> {
            try {
                if (client != null) {
                    close();
                }
            } catch (Throwable e) {
                // going anyway
            }
        });
        t.setDaemon(true);
        t.start();
        try {
            t.join(2000);
        } catch (InterruptedException e) {
            // going anyway
        }
        out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(0);
    }

    void serve() throws InterruptedException {
        LinkedBlockingQueue<Object[]> requests = new LinkedBlockingQueue<>();
        Object mu = new Object();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    line = line.trim();
                    if (!line.isEmpty()) {
                        requests.put(new Object[] {System.nanoTime(), Json.parse(line)});
                    }
                }
            } catch (Exception e) {
                log("reading stdin: " + e);
            }
            requests.add(new Object[] {System.nanoTime(), EOF});
        }, "stdin");
        reader.setDaemon(true);
        reader.start();
        double timeoutS = 0.5;
        while (true) {
            Object[] next = requests.take();
            long arrived = (Long) next[0];
            if (next[1] == EOF) {
                exit();
            }
            Map<String, Object> req = map(next[1]);
            Object id = req.get("id");
            Object op = req.get("op");
            if ("close".equals(op)) {
                Map<String, Object> r = reply("ok");
                r.put("id", id);
                send(r);
                exit();
            }
            double bound;
            if ("open".equals(op)) {
                timeoutS = num(req.get("timeout_ms"), 500) / 1000.0;
                bound = 9.0; // the harness waits 10s for open
            } else {
                bound = timeoutS * 0.8;
            }
            Job job = new Job(req);
            queue("open".equals(op) ? "" : String.valueOf(req.getOrDefault("key", "")), mu).put(job);
            long left = arrived + (long) (bound * 1e9) - System.nanoTime();
            job.done.await(Math.max(0, left), TimeUnit.NANOSECONDS);
            Map<String, Object> r;
            synchronized (mu) {
                if (job.state.equals("done")) {
                    r = job.reply;
                } else {
                    String why;
                    if (job.state.equals("queued")) {
                        job.state = "cancelled";
                        why = "behind a call the library has not returned from";
                    } else {
                        job.abandoned = true;
                        why = "the library had not returned";
                    }
                    r = reply("info", "error", "no answer within " + (long) (bound * 1000) + "ms: " + why);
                }
            }
            r = new LinkedHashMap<>(r);
            r.put("id", id);
            send(r);
        }
    }

    public static void main(String[] args) throws Exception {
        // Quiet logging, to stderr: Curator's and ZooKeeper's warnings and
        // errors only (slf4j-simple, read when the first logger is made).
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        System.setProperty("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        // stdout is the protocol's alone: whatever else prints goes to stderr.
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        System.setOut(System.err);
        new CuratorLock().serve();
    }

    // ---- JSON, enough for the protocol ------------------------------------

    static final class Json {
        final String s;
        int i;

        Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json j = new Json(s);
            Object v = j.value();
            j.ws();
            if (j.i != s.length()) {
                throw new IllegalArgumentException("JSON: trailing text at " + j.i);
            }
            return v;
        }

        void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        Object value() {
            ws();
            if (i >= s.length()) {
                throw new IllegalArgumentException("JSON: unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
            case '{': {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    expect(':');
                    m.put(k, value());
                    ws();
                    if (s.charAt(i) == ',') {
                        i++;
                        continue;
                    }
                    expect('}');
                    return m;
                }
            }
            case '[': {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i) == ',') {
                        i++;
                        continue;
                    }
                    expect(']');
                    return l;
                }
            }
            case '"':
                return string();
            case 't':
                word("true");
                return Boolean.TRUE;
            case 'f':
                word("false");
                return Boolean.FALSE;
            case 'n':
                word("null");
                return null;
            default: {
                int start = i;
                while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                    i++;
                }
                String n = s.substring(start, i);
                if (n.isEmpty()) {
                    throw new IllegalArgumentException("JSON: unexpected " + c + " at " + start);
                }
                if (n.indexOf('.') < 0 && n.indexOf('e') < 0 && n.indexOf('E') < 0) {
                    return Long.parseLong(n);
                }
                return Double.parseDouble(n);
            }
            }
        }

        void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) {
                throw new IllegalArgumentException("JSON: want " + c + " at " + i);
            }
            i++;
        }

        void word(String w) {
            if (!s.startsWith(w, i)) {
                throw new IllegalArgumentException("JSON: want " + w + " at " + i);
            }
            i += w.length();
        }

        String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                default: b.append(e); // " \ /
                }
            }
        }

        static String write(Object v) {
            StringBuilder b = new StringBuilder();
            write(b, v);
            return b.toString();
        }

        static void write(StringBuilder b, Object v) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof String) {
                quote(b, (String) v);
            } else if (v instanceof Number || v instanceof Boolean) {
                b.append(v);
            } else if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    quote(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (v instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object o : (List<?>) v) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, o);
                }
                b.append(']');
            } else {
                quote(b, String.valueOf(v));
            }
        }

        static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            b.append('"');
        }
    }
}
