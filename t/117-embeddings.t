#!/usr/bin/env perl

# POST /v1/embeddings in local mode, through nginx to fairgate-engine on
# the cpu backend with stories260K: OpenAI's input shapes (a string,
# strings, token ids, arrays of token ids), one vector per input in input
# order whatever order the engine ended them in (each the same as that
# input alone), unit vectors of the model's width, base64 bytes that are
# the float values' float32 bytes, usage equal to the prompt tokens (as a
# completion of the same text counts them), the fair queue's accounting,
# the access log and a tokens-per-minute limit; what OpenAI refuses
# refused in its error shape; a location without a zone; a client that
# leaves (its inputs cancelled); an input beyond a small engine's KV pool.
# The sim backend serves its deterministic vectors.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Socket::INET;
use JSON::PP ();
use MIME::Base64 ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT);
use Fairgate::Engine qw(wait_attached);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;
my $WIDTH = 64;     # stories260K's embedding length


sub server {
    my ($engine) = @_;
    my $shm = $engine->shm;
    my $model = $engine->model;
    my $s = Fairgate::Test::Server->new(
        http_config => <<"END",
    fairgate_engine stories shm=$shm model=$model dead_after=1s;
    fairgate_zone zone=llm:16m;
    log_format fg '\$request_uri|\$fairgate_user|\$fairgate_tokens_in|'
                  '\$fairgate_tokens_out|\$fairgate_usage|'
                  '\$fairgate_outcome|\$status';
END
        config => <<"END");
    access_log logs/fg.log fg;

    location /v1/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        client_max_body_size 4m;
        client_body_buffer_size 4m;
        fairgate_engine_pass;
    }
    location /status { fairgate_status; }
    location /bare/v1/ {
        fairgate_engine_pass stories;
    }
    location /lim/v1/ {
        fairgate zone=llm queue=100 timeout=30s;
        fairgate_identity user=\$http_x_user;
        fairgate_user_limit tpm=100;
        fairgate_engine_pass;
    }
END
    $s->start or die $s->last_error;
    return $s;
}


sub post {
    my ($s, $body, $uri) = @_;
    my $r = $s->post($uri // '/v1/embeddings',
                     ref $body ? $J->encode($body) : $body,
                     headers => ['Content-Type: application/json',
                                 'X-User: alice']);
    $r->{json} = eval { $J->decode($r->{body}) };
    return $r;
}


sub embed {
    my ($s, $input, %more) = @_;
    return post($s, { model => 'stories260K', input => $input, %more });
}


sub norm {
    my $n = 0;
    $n += $_ * $_ for @{ $_[0] };
    return sqrt $n;
}


sub maxdiff {
    my ($a, $b) = @_;
    return 1e9 unless @$a == @$b;
    my $d = 0;
    for my $i (0 .. $#$a) {
        my $x = abs($a->[$i] - $b->[$i]);
        $d = $x if $x > $d;
    }
    return $d;
}


# alice's record, once none of her requests is open (a request is settled
# at its end, which may follow the answer)
sub alice {
    my ($s) = @_;
    my $u;
    for (1 .. 750) {
        my $z = $J->decode($s->get('/status')->{body})->{zones}[0];
        ($u) = grep { $_->{name} eq 'alice' } @{ $z->{users} };
        last if $u && $u->{running} == 0 && $u->{waiting} == 0;
        Time::HiRes::sleep(0.02);
    }
    return $u;
}


sub bad {
    my ($s, $body, $status, $param, $what) = @_;
    my $r = post($s, $body);
    my $e = $r->{json} && $r->{json}{error};
    ok($r->{status} == $status && $e && defined $e->{message}
       && $e->{type} && ($e->{param} // '') eq ($param // ''),
       "$what: $status, param " . ($param // 'null'))
        or diag("$r->{status} $r->{body}");
}


# a cache of floats: an input's vector is compared within 1e-5 across
# batches of other inputs, and an F16 cache's rounding of a key near a
# half's boundary depends on the batch's summation order (1.3e-5 seen)
my $e = Fairgate::Engine->new(backend => 'cpu', args => ['--kv-type', 'f32']);
$e->start;
my $s = server($e);
ok(wait_attached($s), 'the worker attached to the engine');

my @texts = ('Once upon a time, there was a little girl named Lily who '
             . 'loved to play in the park with her friends every day.',
             'Lily', 'The cat sat on the mat.', 'Once upon a time',
             'A big red ball rolled down the hill and into the pond.');

subtest 'a string' => sub {
    my $r = embed($s, $texts[3]);
    is($r->{status}, 200, 'status 200');
    like($r->{headers}{'content-type'}, qr{^application/json}, 'JSON');
    my $j = $r->{json};
    is($j->{object}, 'list', 'a list');
    is($j->{model}, 'stories260K', 'the model id');
    is(scalar @{ $j->{data} }, 1, 'one item');
    is($j->{data}[0]{object}, 'embedding', 'an embedding');
    is($j->{data}[0]{index}, 0, 'index 0');
    is(scalar @{ $j->{data}[0]{embedding} }, $WIDTH, "$WIDTH floats");
    cmp_ok(abs(norm($j->{data}[0]{embedding}) - 1), '<', 1e-5,
           'unit length');

    my $c = post($s, { model => 'stories260K', prompt => $texts[3],
                       max_tokens => 1 }, '/v1/completions');
    is($j->{usage}{prompt_tokens}, $c->{json}{usage}{prompt_tokens},
       'usage: the prompt tokens a completion of the text counts');
    is($j->{usage}{total_tokens}, $j->{usage}{prompt_tokens},
       'total_tokens: the same');
};

subtest 'several strings: in input order, each as alone' => sub {
    my @alone = map { embed($s, $_)->{json}{data}[0]{embedding} } @texts;
    my $r = embed($s, [@texts, $texts[1]]);
    is($r->{status}, 200, 'status 200');
    my @d = @{ $r->{json}{data} };
    is(scalar @d, 6, 'six items');
    is(join(',', map { $_->{index} } @d), '0,1,2,3,4,5',
       'indices in input order');
    my $worst = 0;
    for my $i (0 .. 5) {
        my $x = maxdiff($d[$i]{embedding}, $alone[$i % 5 + ($i == 5 ? 1 : 0)]);
        $worst = $x if $x > $worst;
    }
    cmp_ok($worst, '<', 1e-5, "each is its input's vector alone "
           . "(largest difference $worst)");
    cmp_ok(maxdiff($d[0]{embedding}, $d[1]{embedding}), '>', 1e-3,
           'different texts, different vectors');

    my $sum = 0;
    $sum += embed($s, $_)->{json}{usage}{prompt_tokens} for @texts, $texts[1];
    is($r->{json}{usage}{prompt_tokens}, $sum,
       'usage: the inputs\' tokens summed');
};

subtest 'base64: the float32 bytes of the floats' => sub {
    # one input alone runs alike twice: the very same floats
    for my $i (0, 1) {
        my $f = embed($s, $texts[$i]);
        my $b = embed($s, $texts[$i], encoding_format => 'base64');
        is($b->{status}, 200, "text $i: status 200");
        my $raw = MIME::Base64::decode_base64($b->{json}{data}[0]{embedding});
        is(length $raw, 4 * $WIDTH, "text $i: $WIDTH float32s");
        is($raw, pack('f<*', @{ $f->{json}{data}[0]{embedding} }),
           "text $i: the float values' float32 bytes, little-endian");
    }

    # several: batched with others, the same up to rounding
    my $f = embed($s, [@texts[0, 1]]);
    my $b = embed($s, [@texts[0, 1]], encoding_format => 'base64');
    my @v = map {
        [unpack 'f<*', MIME::Base64::decode_base64($_->{embedding})]
    } @{ $b->{json}{data} };
    cmp_ok(maxdiff($v[$_], $f->{json}{data}[$_]{embedding}), '<', 1e-5,
           "several: item $_ decodes to its vector") for 0, 1;
    is(embed($s, $texts[1], encoding_format => 'float')->{status}, 200,
       'encoding_format float');
    is(embed($s, $texts[1], dimensions => $WIDTH)->{status}, 200,
       "dimensions $WIDTH: the model's width");
};

subtest 'token ids' => sub {
    my $one = embed($s, [1, 400, 59, 300]);
    is($one->{status}, 200, 'an array of token ids: status 200');
    is(scalar @{ $one->{json}{data} }, 1, 'one input');
    is($one->{json}{usage}{prompt_tokens}, 4, 'its 4 tokens');
    my $two = embed($s, [[7, 8, 9], [1, 400, 59, 300]]);
    is(scalar @{ $two->{json}{data} }, 2, 'arrays of token ids: one each');
    cmp_ok(maxdiff($two->{json}{data}[1]{embedding},
                   $one->{json}{data}[0]{embedding}), '<', 1e-5,
           'the same ids, the same vector');
    is($two->{json}{usage}{prompt_tokens}, 7, 'usage: 3 + 4');
};

subtest 'refused as OpenAI refuses' => sub {
    bad($s, { model => 'stories260K', input => '' }, 400, 'input',
        'an empty string');
    bad($s, { model => 'stories260K', input => ['a', ''] }, 400, 'input',
        'an empty string among others');
    bad($s, { model => 'stories260K', input => [] }, 400, 'input',
        'no input');
    bad($s, { model => 'stories260K', input => [('x') x 2049] }, 400,
        'input', '2049 inputs');
    bad($s, { model => 'stories260K', input => 'a', dimensions => 32 },
        400, 'dimensions', 'dimensions not the width');
    bad($s, { model => 'stories260K', input => 'a',
              encoding_format => 'int8' }, 400, 'encoding_format',
        'an unknown encoding');
    bad($s, { model => 'stories260K', input => 'a', temperature => 0 },
        400, 'temperature', 'a field of the completions');
    bad($s, { model => 'stories260K', input => [[1, 99999]] }, 400,
        'input', 'a token outside the vocabulary');
    bad($s, { model => 'stories260K', input => [(5) x 5000] }, 400, 'input',
        'an input longer than the context');
    bad($s, { model => 'nope', input => 'a' }, 404, 'model',
        'an unknown model');
    bad($s, '{"model": "stories260K", "input": ', 400, undef,
        'broken JSON');
    my $r = embed($s, [('Lily') x 2048]);
    is($r->{status}, 200, '2048 inputs: status 200');
    is(scalar @{ $r->{json}{data} // [] }, 2048, '2048 items');
    is($r->{json}{data}[2047]{index}, 2047, 'the last one\'s index');
};

subtest 'metered as a chat is' => sub {
    my $before = alice($s);
    my $r = embed($s, [@texts[0, 2]]);
    my $n = $r->{json}{usage}{prompt_tokens};

    # the line comes at the request's end, which may follow the answer
    my @l;
    for (1 .. 750) {
        @l = grep { m{^/v1/embeddings\|alice\|$n\|} }
             $s->access_lines('fg.log', 0);
        last if @l;
        Time::HiRes::sleep(0.02);
    }
    like($l[-1] // '', qr{^/v1/embeddings\|alice\|$n\|0\|\w+\|served\|200$},
         "the access log: $n tokens in, none out, served");

    my $after = alice($s);
    is($after->{tokens_in} - $before->{tokens_in}, $n,
       "the status page: alice charged its $n prompt tokens");
    is($after->{tokens_out}, $before->{tokens_out}, '... and no output');
    is($after->{finished} - $before->{finished}, 1, '... one more finished');
    my $eng = $J->decode($s->get('/status')->{body})->{engines}[0]{load};
    is($eng->{running}, 0, 'the engine holds nothing after');
};

subtest 'rate-limited by its prompt tokens' => sub {
    my $body = $J->encode({ model => 'stories260K',
                            input => ['Once upon a time ' x 15] });
    my @h = ('Content-Type: application/json', 'X-User: dave');
    my $r = $s->post('/lim/v1/embeddings', $body, headers => \@h);
    is($r->{status}, 200, 'within tpm=100: status 200');
    my $n = $J->decode($r->{body})->{usage}{prompt_tokens};
    cmp_ok($n, '>', 50, "$n prompt tokens");
    $r = $s->post('/lim/v1/embeddings', $body, headers => \@h);
    is($r->{status}, 429, "another $n would pass tpm=100: status 429");
    like($r->{body}, qr/"error"/, 'an OpenAI error');
};

subtest 'without a zone, pinned to the engine' => sub {
    my $r = post($s, { model => 'stories260K', input => [@texts[1, 2]] },
                 '/bare/v1/embeddings');
    is($r->{status}, 200, 'status 200');
    is(scalar @{ $r->{json}{data} // [] }, 2, 'two items');
    $r = post($s, { model => 'stories260K', input => [[1, 99999]] },
              '/bare/v1/embeddings');
    is($r->{json}{error}{param}, 'input[0][1]',
       'the parse knows the vocabulary here');
};

subtest 'a client that leaves has its inputs cancelled' => sub {
    my $st = sub { $J->decode($s->get('/status')->{body})->{engines}[0]{load} };
    my $before = $st->();
    my $body = $J->encode({ model => 'stories260K',
                            input => [('Once upon a time ' x 40) x 2048] });
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $s->port, Proto => 'tcp')
        or die "connect: $!";
    print {$sock} "POST /v1/embeddings HTTP/1.0\r\nHost: x\r\n"
                  . "X-User: bob\r\nContent-Type: application/json\r\n"
                  . 'Content-Length: ' . length($body) . "\r\n\r\n$body";
    my $running;
    for (1 .. 1500) {
        $running = $st->()->{running};
        last if $running;
        Time::HiRes::sleep(0.01);
    }
    ok($running, "the engine runs its inputs ($running)");
    close $sock;

    my $after;
    for (1 .. 1500) {
        $after = $st->();
        last if $after->{running} == 0
                && $after->{kv_free} == $after->{kv_blocks}
                && $after->{cancelled} > $before->{cancelled};
        Time::HiRes::sleep(0.01);
    }
    ok($after->{running} == 0 && $after->{kv_free} == $after->{kv_blocks}
       && $after->{cancelled} > $before->{cancelled},
       'cancelled: nothing running, every block free, well before 2048 '
       . 'inputs would end') or diag($J->encode($after));
};

is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;

subtest 'an input beyond the KV pool: 400' => sub {
    my $small = Fairgate::Engine->new(backend => 'cpu',
                                      args => ['--kv-blocks', 4]);
    $small->start;
    my $t = server($small);
    ok(wait_attached($t), 'attached to an engine of 4 KV blocks');
    my $r = embed($t, [$texts[1], 'Once upon a time ' x 20]);
    is($r->{status}, 400, 'status 400');
    is($r->{json}{error}{code}, 'context_length_exceeded',
       'context_length_exceeded') or diag($r->{body});
    is(embed($t, $texts[1])->{status}, 200, 'a short one is served');
    is($t->stop, 0, 'nginx exits cleanly');
    $small->stop;
};

subtest 'sim backend: deterministic vectors' => sub {
    my $sim = Fairgate::Engine->new(backend => 'sim');
    $sim->start;
    my $t = server($sim);
    ok(wait_attached($t), 'attached');
    my $a = embed($t, [$texts[0], $texts[1]]);
    my $b = embed($t, $texts[1]);
    is($a->{status}, 200, 'status 200');
    is(scalar @{ $a->{json}{data}[0]{embedding} }, 16, '16 floats');
    cmp_ok(maxdiff($a->{json}{data}[1]{embedding},
                   $b->{json}{data}[0]{embedding}), '<', 1e-6,
           'the same text, the same vector');
    is($t->stop, 0, 'nginx exits cleanly');
    $sim->stop;
};

done_testing();
