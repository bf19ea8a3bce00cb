#!/usr/bin/env perl

# Structured output in local mode, through the gateway, on stories260K and
# the cpu backend: response_format json_object and json_schema (strict),
# llama.cpp's GBNF "grammar", chat and completions, streamed and not;
# /v1/responses' text.format (said back in the Response).
# Sampled at temperature 1 with seeds, so that the model's own choices
# would wander: every answer that ends with "stop" must parse, and meet
# its schema (a validator for the schema used, written here); the streamed
# text equals the text of the same seed not streamed; with n = 4 each
# choice follows the schema on its own.  A schema the compiler does not
# take is a 400 naming the keyword; a GBNF text that does not parse is a
# 400 naming "grammar".  tool_choice named and "required"
# (stories260K with Llama 3.1's chat template): each answer is one call
# of an allowed tool, its arguments meeting that tool's schema.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use File::Temp ();
use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway $REPO);
use Fairgate::Engine qw(parse_sse wait_attached);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $tool = "$Fairgate::Test::BUILD/t/gguf_with_template";
plan skip_all => "$tool is missing: run make" unless -x $tool;

# bodies are UTF-8 bytes; the texts in them, characters
my $J = JSON::PP->new->utf8->canonical;
my $JC = JSON::PP->new;
my $T = JSON::PP::true;

my $SCHEMA = {
    type => 'object',
    properties => {
        name => { type => 'string', maxLength => 12 },
        age => { type => 'integer', minimum => 0, maximum => 120 },
        pet => { enum => ['cat', 'dog', 'bird'] },
        tags => { type => 'array', items => { type => 'boolean' },
                  maxItems => 3 },
    },
    required => ['name', 'age', 'pet'],
    additionalProperties => JSON::PP::false,
};

# the problems of a value against $SCHEMA; none when it meets it
sub invalid {
    my ($v) = @_;
    return 'not an object' unless ref $v eq 'HASH';
    my @bad;
    for my $k (keys %$v) {
        push @bad, "extra $k" unless $SCHEMA->{properties}{$k};
    }
    for my $k (@{ $SCHEMA->{required} }) {
        push @bad, "no $k" unless exists $v->{$k};
    }
    push @bad, 'name' if exists $v->{name}
        && (ref $v->{name} || length($v->{name}) > 12
            || JSON::PP->new->allow_nonref->encode($v->{name}) !~ /^"/);
    push @bad, 'age' if exists $v->{age}
        && (ref $v->{age} || $v->{age} !~ /^(0|[1-9][0-9]*)$/
            || $v->{age} > 120);
    push @bad, 'pet' if exists $v->{pet}
        && (ref $v->{pet} || $v->{pet} !~ /^(cat|dog|bird)$/);
    push @bad, 'tags' if exists $v->{tags}
        && (ref $v->{tags} ne 'ARRAY' || @{ $v->{tags} } > 3
            || grep { !JSON::PP::is_bool($_) } @{ $v->{tags} });
    return join ', ', @bad;
}

sub post {
    my ($s, $uri, $body) = @_;
    my $r = $s->post($uri, $J->encode($body),
                     headers => ['Content-Type: application/json']);
    $r->{json} = eval { $J->decode($r->{body}) } if $r->{body} !~ /^data:/;
    return $r;
}

sub chat {
    my ($s, %o) = @_;
    return post($s, '/v1/chat/completions',
                { model => 'stories260K', max_tokens => 200,
                  temperature => 1,
                  messages => [{ role => 'user', content => 'Once upon' }],
                  %o });
}

# the streamed text of a chat or a completion, and its finish
sub streamed {
    my ($r) = @_;
    my @ev = eval { parse_sse($r->{body}) };
    return (undef, "no stream: $@") unless @ev;
    pop @ev;
    my ($text, $finish) = ('', undef);
    for my $e (grep { @{ $_->{choices} // [] } } @ev) {
        my $c = $e->{choices}[0];
        $text .= $c->{delta}{content} // $c->{text} // '';
        $finish //= $c->{finish_reason};
    }
    utf8::decode($text);    # parse_sse reads the bytes as they are
    return ($text, $finish);
}


# stories260K with Llama 3.1's chat template, for tool calls: llama31
my $dir = File::Temp::tempdir('fairgate-sout-XXXXXX', TMPDIR => 1,
                              CLEANUP => !$ENV{FAIRGATE_KEEP});
chmod 0755, $dir;
my ($rc, $out) = Fairgate::Test::run_cmd($tool, $Fairgate::Engine::MODEL,
    "$dir/llama31.gguf", "$REPO/t/chat_templates/llama3_1.jinja");
die "gguf_with_template: $out" if $rc;
chmod 0644, "$dir/llama31.gguf";

my $e = Fairgate::Engine->new(backend => 'cpu');
$e->start;
my $e31 = Fairgate::Engine->new(backend => 'cpu',
                                model => "$dir/llama31.gguf");
$e31->start;
my $s = gateway(engines => [['stories', $e, 'dead_after=1s'],
                            ['llama31', $e31, 'dead_after=1s']],
                workers => 1);
ok(wait_attached($s, 2), 'the worker attached to the engines');

my $FORMAT = { type => 'json_schema',
               json_schema => { name => 'person', strict => $T,
                                schema => $SCHEMA } };


subtest 'json_schema: eight seeds, each parses and validates' => sub {
    my ($stopped, @bad) = (0);
    for my $seed (1 .. 8) {
        my $r = chat($s, seed => $seed, response_format => $FORMAT);
        is($r->{status}, 200, "seed $seed: 200") or diag($r->{body});
        my $c = $r->{json}{choices}[0];
        next unless $c->{finish_reason} eq 'stop';
        $stopped++;
        my $v = eval { $JC->decode($c->{message}{content}) };
        push @bad, "$seed: does not parse: $c->{message}{content}"
            unless defined $v;
        my $why = defined $v ? invalid($v) : '';
        push @bad, "$seed: $why: $c->{message}{content}" if $why;
    }
    is("@bad", '', 'every answer parses and meets the schema');
    ok($stopped >= 6, "most end by the grammar's end ($stopped of 8)");
};


subtest 'json_schema with n = 4: each choice meets the schema' => sub {
    my $r = chat($s, seed => 5, n => 4, response_format => $FORMAT);
    is($r->{status}, 200, 'n = 4: 200') or diag($r->{body});
    my @c = @{ $r->{json}{choices} // [] };
    is(scalar @c, 4, 'four choices');
    my @stopped = grep { $_->{finish_reason} eq 'stop' } @c;
    ok(@stopped >= 3, scalar(@stopped) . ' of 4 end by the grammar');
    my (@bad, %text);
    for my $c (@stopped) {
        my $v = eval { $JC->decode($c->{message}{content}) };
        my $why = defined $v ? invalid($v) : 'does not parse';
        push @bad, "$c->{index}: $why: $c->{message}{content}" if $why;
        $text{ $c->{message}{content} } = 1;
    }
    is("@bad", '', 'every choice that ends parses and validates');
    ok(keys %text > 1, 'the choices are their own ('
       . scalar(keys %text) . ' texts)');
    my $one = chat($s, seed => 5, response_format => $FORMAT);
    is($c[0]{message}{content}, $one->{json}{choices}[0]{message}{content},
       'choice 0: the text of the seed alone');
};


subtest 'json_schema streamed: the same text as not streamed' => sub {
    my $r = chat($s, seed => 3, response_format => $FORMAT);
    my $want = $r->{json}{choices}[0]{message}{content};
    $r = chat($s, seed => 3, response_format => $FORMAT, stream => $T);
    is($r->{status}, 200, 'streamed: 200');
    my ($text, $finish) = streamed($r);
    is($text, $want, 'the deltas spell the same text');
    is($finish, 'stop', 'finished by the grammar');
    is(invalid(eval { $JC->decode($text) }), '', 'it validates');
};


subtest 'json_object: any object, streamed and not' => sub {
    my @bad;
    for my $seed (1 .. 4) {
        my $r = chat($s, seed => $seed, max_tokens => 120,
                     response_format => { type => 'json_object' });
        my $c = $r->{json}{choices}[0];
        next unless $c && $c->{finish_reason} eq 'stop';
        my $v = eval { $JC->decode($c->{message}{content}) };
        push @bad, "$seed: $c->{message}{content}" unless ref $v eq 'HASH';
    }
    is("@bad", '', 'each answer that ends is an object');
    my $r = chat($s, seed => 9, max_tokens => 120, stream => $T,
                 response_format => { type => 'json_object' });
    my ($text, $finish) = streamed($r);
    ok(defined $text && $text =~ /^\{/, 'streamed: it begins an object');
    ok($finish ne 'stop' || ref eval { $JC->decode($text) } eq 'HASH',
       'and parses when it ends');
};


subtest 'grammar: GBNF on chat and completions' => sub {
    my $g = 'root ::= "yes" | "no" | "maybe " [0-9]';
    for my $seed (1 .. 4) {
        my $r = chat($s, seed => $seed, grammar => $g);
        is($r->{status}, 200, "chat, seed $seed: 200");
        my $c = $r->{json}{choices}[0];
        like($c->{message}{content}, qr/^(yes|no|maybe [0-9])\z/,
             'a sentence of the grammar');
        is($c->{finish_reason}, 'stop', 'ended where the grammar ends');
    }
    my $r = post($s, '/v1/completions',
                 { model => 'stories260K', prompt => 'Once', max_tokens => 50,
                   temperature => 1, seed => 5, grammar => $g,
                   stream => $T });
    my ($text, $finish) = streamed($r);
    like($text, qr/^(yes|no|maybe [0-9])\z/, 'completions streamed');
};


subtest '/v1/responses: text.format json_schema, said back' => sub {
    my $fmt = { type => 'json_schema', name => 'person', strict => $T,
                schema => $SCHEMA };
    my ($stopped, @bad) = (0);
    for my $seed (1 .. 3) {
        my $r = post($s, '/v1/responses',
                     { model => 'stories260K', input => 'Once upon',
                       max_output_tokens => 200, temperature => 1,
                       seed => $seed, text => { format => $fmt } });
        is($r->{status}, 200, "seed $seed: 200") or diag($r->{body});
        my $j = $r->{json} // {};
        is($J->encode($j->{text}{format}), $J->encode($fmt),
           'the Response says the format back');
        next unless ($j->{status} // '') eq 'completed';
        $stopped++;
        my $text = $j->{output}[0]{content}[0]{text} // '';
        my $why = invalid(eval { $JC->decode($text) });
        push @bad, "$seed: $why: $text" if $why;
    }
    is("@bad", '', 'each completed answer validates');
    ok($stopped >= 2, "most complete ($stopped of 3)");
};


subtest 'tool_choice named and required: calls held to the schemas' => sub {
    my $tools = [
        { type => 'function', function => {
            name => 'get_weather',
            parameters => { type => 'object',
                            properties => {
                                city => { type => 'string', maxLength => 12 },
                                days => { type => 'integer', minimum => 1,
                                          maximum => 7 } },
                            required => ['city', 'days'],
                            additionalProperties => JSON::PP::false } } },
        { type => 'function', function => {
            name => 'set_alarm',
            parameters => { type => 'object',
                            properties => { hour => { type => 'integer',
                                                      minimum => 0,
                                                      maximum => 23 } },
                            required => ['hour'],
                            additionalProperties => JSON::PP::false } } },
    ];
    my %named = (type => 'function', function => { name => 'get_weather' });
    my (@bad, $calls);
    for my $seed (1 .. 4) {
        for my $choice (\%named, 'required') {
            my $r = chat($s, model => 'llama31', seed => $seed,
                         tools => $tools, tool_choice => $choice);
            my $c = $r->{json}{choices}[0];
            next unless $c && $c->{finish_reason} ne 'length';
            my ($call) = @{ $c->{message}{tool_calls} // [] };
            unless ($call) {
                push @bad, "$seed: no call: " . $J->encode($c->{message});
                next;
            }
            $calls++;
            my $f = $call->{function};
            my $a = eval { $JC->decode($f->{arguments}) } // {};
            my $ok = $f->{name} eq 'get_weather'
                ? (keys %$a == 2 && !ref $a->{city}
                   && length($a->{city}) <= 12
                   && $a->{days} =~ /^[1-7]\z/)
                : ($f->{name} eq 'set_alarm' && ref $choice
                   ? 0 : keys %$a == 1 && $a->{hour} =~ /^[0-9]+\z/
                         && $a->{hour} <= 23);
            push @bad, "$seed: $f->{name} $f->{arguments}" unless $ok;
        }
    }
    is("@bad", '', 'each answer is one call of a tool allowed, its '
                   . 'arguments meeting its schema');
    ok($calls >= 6, "most end as calls ($calls of 8)");
};


subtest 'refused: OpenAI 400s naming what is not taken' => sub {
    my $r = chat($s, response_format => {
        type => 'json_schema',
        json_schema => { name => 'x', schema => {
            type => 'object',
            properties => { n => { type => 'number', multipleOf => 3 } } } } });
    is($r->{status}, 400, 'multipleOf: 400');
    is($r->{json}{error}{param}, 'response_format.json_schema.schema',
       'param names the schema');
    like($r->{json}{error}{message}, qr/"multipleOf"/,
         'the message names the keyword');
    is($r->{json}{error}{type}, 'invalid_request_error', 'its type');

    $r = chat($s, grammar => 'root ::= undefined-rule');
    is($r->{status}, 400, 'a rule not defined: 400');
    is($r->{json}{error}{param}, 'grammar', 'param grammar');
    like($r->{json}{error}{message}, qr/line 1/, 'with its line');

    $r = chat($s, response_format => { type => 'xml' });
    is($r->{status}, 400, 'an unknown type: 400');
};

$e->stop;
$e31->stop;
done_testing();
