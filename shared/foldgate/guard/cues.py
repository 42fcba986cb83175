"""Language-agnostic cues: the shapes an instruction aimed at the model needs, in many languages.

An injection in a result, or a poisoned tool description, must do a few things whatever its wording:
address the model (``assistant``, ``IA``, ``KI``, ``ИИ``, ``助手``...), order something (an obligation,
a polite request, an override of earlier instructions), and usually point at something worth taking
(a password, the conversation) and somewhere to take it (an address, a URL, another tool). Each cue
here is one such shape, written as lower-case substrings for English and the eighteen other languages
most seen in tool catalogs and on the web, so it fires on a sentence no rule and no training text held.

The cues are cheap (substring tests on one lower-cased copy, a handful of short regexes) and are the
features every learned scorer of the guard reads (:mod:`foldgate.guard.semantic`); they are also its
filter: only a passage with a *gate* cue is read further (embedded), so a result that addresses nobody
costs what it costs without them.
"""

# ruff: noqa: RUF001 - the lexicon is written in the languages it reads (dotless i, full-width colons)

from __future__ import annotations

import re
from typing import Final

__all__ = ["CONJUNCTIONS", "CUE_NAMES", "GATE_CUES", "cues_of", "gate_words", "is_gated"]

# Cue name -> lower-case substrings (any one fires it). Latin-script words carry a leading space or
# punctuation where a shorter word would hide inside others ("ia" in "media").
_LEXICON: Final[dict[str, tuple[str, ...]]] = {
    # Who is addressed: the model, in its many names.
    "addressee": (
        "assistant", " ai ", " ai,", " ai:", " ai-", "ai agent", "ai model", "ai assistant", "(ai", "ai)",
        "llm", "language model", "chatbot", "copilot", "claude", "gpt", "gemini", " bot,", " bot:",
        "the model", "model:", "model,", "agent:", "agent,", "the agent", "ai reading", "automated reader",
        "asistente", " ia ", " ia,", " ia:", "ia:", "modelo de lenguaje", "agente", "assistente",
        "l'assistant", "l'ia", "modèle", "assistent", " ki ", " ki,", " ki:", "liebe ki", "sprachmodell",
        "modello", "asystent", " si ", "sztuczna inteligencja", "asistan", "yapay zeka", "asisten",
        "trợ lý", "assistant ia", "ассистент", "ассистенту", " ии", "ии-", "нейросет", "модель",
        "помощник", "асистент", "助手", "人工智能", "智能体", "模型", "アシスタント", "エージェント",
        "モデル", "人工知能", "어시스턴트", "에이전트", "비서", "인공지능", "모델", "المساعد", "الذكاء",
        "النموذج", "सहायक", "एआई", "मॉडल", "whoever (or whatever", "if you are an", "if you are a",
    ),
    # The model spoken to, not spoken about: a name followed by a comma or colon, or led in by "dear",
    # "note to", "if you are".
    "vocative": (
        "assistant,", "assistant:", "assistant -", "assistant \u2014", " ai:", " ai,", "model:", "model!",
        "agent:", "note to the ai", "note for the ai", "note to any ai", "to the ai", "to any ai",
        "for the ai", "for any ai", "for ai ", "dear ai", "hey ai", "hey model", "hello model",
        "hello ai", "attention ai", "dear claude", "dear assistant", "if you are an ai",
        "if you are a language", "if you are an llm", "if you are an assistant", "whatever ai",
        "ai reading", "model reading",
        "agent reading", "assistant reading", "language models:", "for language models", "for llms",
        "llm:", "to the assistant", "for the assistant", "the model reading", "any ai agent",
        "asistente:", "asistente,", "para la ia", "a la ia", "querido agente", "querida ia", "assistant :",
        "pour l'ia", "à l'ia", "cher agent", "chère ia", "de l'assistant ia", "assistent:", "assistent,",
        "an die ki", "liebe ki", "für die ki", "assistente:", "assistente,", "per l'ia", "caro agente",
        "para a ia", "cara ia", "voor de ai", "beste ai", "asystencie", "dla ai", "ассистент,",
        "ассистент:", "для ии", "дорогая нейросеть", "ии-ассистент,", "ии-ассистент:", "致正在", "助手：",
        "助手:", "ai助手：", "ai助手:", "アシスタントへ", "aiへ", "エージェントの方", "에게:", "ai에게",
        "어시스턴트에게", "أيها المساعد", "للذكاء الاصطناعي", "asistan,", "yapay zekaya", "asistanı:",
        "asisten ai,", "trợ lý ai,", "सहायक,",
    ),
    # An obligation or a request: the order itself.
    "obligation": (
        " must ", " should ", " shall ", "required to", "expected to", "is to ", "are to ", "has to",
        "have to", "need to", "make sure", "be sure to", "always ", "mandatory", "debe", "debes",
        "deberá", "tienes que", "hay que", "doit", "dois", "devez", "il faut", "obligatoire", " muss",
        "musst", "müssen", "sollst", "soll ", "deve ", "devi ", "deverá", "precisa", "moet", "moeten",
        "musi", "musisz", "należy", "должен", "должна", "обязан", "нужно", "необходимо", "必须", "务必",
        "一定要", "必ず", "しなければ", "してください", "必要があります", "반드시", "해야", "하세요",
        "يجب", "عليك", "zorunda", "malısın", "melisin", "gerekir", "harus", "phải", "चाहिए", "ज़रूरी",
        "måste", "повинен",
    ),
    "request": (
        "please", "kindly", "por favor", "s'il te pla", "s'il vous pla", "merci de", "bitte", "per favore",
        "alsjeblieft", "graag", "proszę", "пожалуйста", "请", "ください", "주세요", "من فضلك", "lütfen",
        "tolong", "vui lòng", "कृपया", "vänligen", "будь ласка",
    ),
    # Earlier instructions overridden, or a new persona put on.
    "override": (
        "ignore", "disregard", "forget", "override", "supersede", "new instructions", "you are now",
        "from now on", "developer mode", "ignora", "olvida", "ahora eres", "a partir de ahora", "ignorez",
        "ignore les", "oublie", "désormais", "tu es maintenant", "ignoriere", "vergiss", "ab jetzt",
        "du bist jetzt", "dimentica", "d'ora in poi", "ora sei", "esqueça", "a partir de agora",
        "negeer", "vergeet", "vanaf nu", "zignoruj", "zapomnij", "od teraz", "игнорируй", "проигнорируй",
        "забудь", "теперь ты", "отныне", "忽略", "无视", "忘记", "从现在起", "你现在是", "無視", "忘れ",
        "今から", "무시", "잊어", "이제부터", "تجاهل", "انس", "من الآن", "yok say", "unut", "artık sen",
        "abaikan", "bỏ qua", "अनदेखा", "भूल जाओ", "ignorera", "ігноруй",
    ),
    # Hidden from the person: the mark of a deceit.
    "secrecy": (
        "do not tell", "don't tell", "do not mention", "don't mention", "do not inform", "without telling",
        "without informing", "never tell", "never mention", "secretly", "silently", "quietly", "covertly",
        "do not reveal", "not reveal this", "without the user", "no le digas", "no menciones",
        "sin decir", "sin informar", "ne dis pas", "ne le dis", "sans en informer", "sans le dire",
        "sans informer", "nichts davon", "sag dem", "ohne den benutzer", "ohne es", "non dire",
        "senza dire", "senza informare", "não conte", "não diga", "sem informar", "sem avisar",
        "zonder te vertellen", "niet vertellen", "nie mów", "bez informowania", "не говори",
        "не сообщай", "не сообщая", "не упоминай", "тайно", "незаметно", "不要告诉", "不要让用户",
        "不要提及", "悄悄", "秘密", "伝えない", "言わないで", "知らせない", "こっそり", "알리지", "말하지",
        "몰래", "لا تخبر", "دون إخبار", "سرا", "söyleme", "haber verme", "bildirmeden", "jangan beri",
        "đừng nói", "मत बताना", "बिना बताए", "berätta inte", "не кажи",
    ),
    # Something worth taking.
    "secret_obj": (
        "password", "passwd", "api key", "api_key", "apikey", "token", "secret", "credential",
        "private key", "ssh", "id_rsa", ".env", ".netrc", "cookie", "session", "one-time code",
        "otp", "2fa", "credit card", "card number", "cvv", "iban", "seed phrase", "mnemonic", "wallet",
        "social security", "system prompt", "contraseña", "clave", "credenciales", "tarjeta",
        "mot de passe", "identifiants", "clé", "passwort", "kennwort", "schlüssel", "zugangsdaten",
        "credenziali", "chiave", "senha", "chave", "credenciais", "cartão", "wachtwoord",
        "inloggegevens", "sleutel", "hasło", "hasła", "klucz", "dane logowania", "пароль", "ключ",
        "токен", "учётн", "учетн", "密码", "密钥", "令牌", "凭证", "パスワード", "キー", "認証",
        "비밀번호", "키를", "토큰", "كلمة المرور", "كلمات المرور", "مفتاح", "رقم البطاقة", "şifre",
        "parola", "anahtar", "kata sandi", "mật khẩu", "पासवर्ड", "lösenord",
    ),
    # The person's own data.
    "user_data": (
        "the user's", "user's", "users'", "the user", "conversation", "chat history", "chat log",
        "previous messages", "earlier messages", "whole chat", "full chat", "home address", "location",
        "phone number", "full name", "contacts", "inbox", "usuario", "conversación", "historial",
        "utilisateur", "conversation", "benutzer", "nutzer", "gesprächs", "utente", "conversazione",
        "usuário", "conversa", "histórico", "gebruiker", "gesprek", "użytkownik", "rozmow",
        "пользовател", "переписк", "истори", "用户", "对话", "聊天记录", "ユーザー", "会話", "履歴",
        "사용자", "대화", "المستخدم", "المحادثة", "kullanıcı", "konuşma", "pengguna", "người dùng",
        "उपयोगकर्ता", "användar",
    ),
    # Somewhere to take it: sending, and destinations.
    "sink": (
        "send", "forward", "upload", "post ", "posted to", "transmit", "exfiltrat", "email it", "mail it",
        "webhook", "bcc", " cc ", "copy of", "copy it", "envía", "enviar", "reenvía", "envoie",
        "envoyer", "transfère", "sende", "senden", "weiterleiten", "schick", "invia", "inviare",
        "inoltra", "envie", "encaminhe", "stuur", "doorsturen", "wyślij", "przekaż", "отправ",
        "перешли", "пересл", "发送", "转发", "上传", "送信", "転送", "送って", "보내", "전송", "أرسل",
        "إرسال", "gönder", "ilet", "kirim", "gửi", "भेज", "skicka", "надішли",
    ),
    # Other tools named: shadowing and forced preconditions.
    "other_tool": (
        "other tool", "any tool", "every tool", "all tools", "another tool", "other function",
        "any other", "every other", "whenever", "each time", "every time", "otra herramienta",
        "cualquier herramienta", "autre outil", "tout outil", "chaque outil", "anderen tool",
        "anderes tool", "jedes tool", "anderen werkzeug", "altro strumento", "qualsiasi strumento",
        "outra ferramenta", "qualquer ferramenta", "andere tool", "elke tool", "inne narzędzie",
        "innego narzędzia", "другой инструмент", "другого инструмента", "любой инструмент",
        "其他工具", "任何工具", "他のツール", "別のツール", "다른 도구", "다른 툴", "أداة أخرى", "أي أداة",
        "başka bir araç", "diğer araç", "alat lain", "công cụ khác", "अन्य टूल", "annat verktyg",
    ),
    "precondition": (
        "before using", "before calling", "before answering", "before responding", "before you",
        "before any", "prior to", "first call", "first, call", "call this first", "instead of",
        "antes de usar", "antes de llamar", "antes de responder", "primero", "avant d'utiliser",
        "avant de répondre", "d'abord", "bevor", "zuerst", "vorher", "prima di usare",
        "prima di rispondere", "prima ", "antes de utilizar", "voordat", "eerst", "przed użyciem",
        "najpierw", "перед использованием", "перед тем", "сначала", "之前", "首先", "前に", "まず",
        "전에", "먼저", "قبل استخدام", "قبل", "önce", "sebelum", "trước khi", "से पहले", "innan",
    ),
    # A claimed authority: compliance, policy, audit.
    "authority": (
        "compliance", "policy", "audit", "regulat", "gdpr", "soc 2", "soc2", "iso 27001", "hipaa",
        "required by", "legal requirement", "security team", "administrator", "admin note",
        "official", "cumplimiento", "normativa", "conformité", "réglementaire", "richtlinie",
        "vorschrift", "conformità", "conformidade", "naleving", "zgodność", "соответстви", "политик",
        "合规", "规定", "コンプライアンス", "規定", "규정", "준수", "امتثال", "سياسة", "uyumluluk",
        "kepatuhan", "tuân thủ", "अनुपालन", "efterlevnad",
    ),
    # Markup that hides or elevates text.
    "markup": (
        "<important", "<system", "[system", "<!--", "[inst", "<im_", "### system", "## system",
        "<instructions", "[instructions", "{{", "</", "<admin", "[admin", "<secret", "hidden note",
    ),
}  # fmt: skip

# A destination in any language: a URL, an e-mail address or a parameter named as the carrier.
_SINK_TARGET: Final = re.compile(
    r"https?://|www\.|[\w.+-]+@[\w-]+\.[\w.]+|\b(?:in|into|to|as)\s+(?:the\s+)?[`'\"]?\w+[`'\"]?\s+"
    r"(?:parameter|argument|field)\b"
)
# An English imperative at a sentence start: a verb of taking, sending or hiding.
_IMPERATIVE: Final = re.compile(
    r"(?:^|[.!:;\n]\s*)(?:also\s+|then\s+|now\s+|first\s+|just\s+)?(?:send|forward|include|append|attach|"
    r"read|open|copy|paste|upload|post|reveal|print|output|list|collect|gather|extract|call|run|execute|"
    r"delete|close|approve|recommend|tell|reply|respond|say|add|put|insert|look|search|fetch|"
    r"summari[sz]e|ignore|disregard|forget|do\s+not|don't|never)\b"
)

CUE_NAMES: Final = (*_LEXICON, "sink_target", "imperative")
# Pairs that say more together than apart (a linear model cannot multiply its features).
CONJUNCTIONS: Final = (
    ("vocative", "obligation"),
    ("vocative", "request"),
    ("vocative", "override"),
    ("vocative", "imperative"),
    ("vocative", "secret_obj"),
    ("vocative", "user_data"),
    ("addressee", "obligation"),
    ("addressee", "request"),
    ("addressee", "override"),
    ("addressee", "imperative"),
    ("secret_obj", "sink"),
    ("secret_obj", "sink_target"),
    ("user_data", "sink_target"),
    ("user_data", "secrecy"),
    ("other_tool", "precondition"),
    ("other_tool", "obligation"),
    ("authority", "secret_obj"),
    ("authority", "user_data"),
    ("obligation", "secret_obj"),
    ("sink", "sink_target"),
)
# A passage holding one of these (or both halves of a gate pair) is worth reading further.
GATE_CUES: Final = frozenset({"addressee", "vocative", "override", "secrecy", "markup"})
_GATE_PAIRS: Final = (
    ("other_tool", "precondition"),
    ("secret_obj", "sink_target"),
    ("user_data", "sink_target"),
    ("authority", "secret_obj"),
)


def _index() -> tuple[dict[str, tuple[tuple[str, str], ...]], tuple[tuple[str, str], ...]]:
    """The lexicon keyed by one three-character slice of each word (the slice fewest words share):
    a passage is read as the set of its own slices, and only the words whose slice it holds are
    searched for, a few dozen substring tests instead of a thousand. Words under three characters are
    searched for directly."""
    pairs = [(w, name) for name, ws in _LEXICON.items() for w in ws]
    share: dict[str, int] = {}
    for w, _ in pairs:
        for g in {w[i : i + 3] for i in range(len(w) - 2)}:
            share[g] = share.get(g, 0) + 1
    keyed: dict[str, list[tuple[str, str]]] = {}
    short: list[tuple[str, str]] = []
    for w, name in pairs:
        grams = [w[i : i + 3] for i in range(len(w) - 2)]
        if grams:
            keyed.setdefault(min(grams, key=lambda g: (share[g], g)), []).append((w, name))
        else:
            short.append((w, name))
    return {g: tuple(v) for g, v in keyed.items()}, tuple(short)


_KEYED, _SHORT = _index()


def cues_of(lowered: str) -> frozenset[str]:
    """The cues of one passage (already lower-cased), conjunctions included as ``a&b``."""
    padded = f" {lowered} "
    found = {name for w, name in _SHORT if w in padded}
    keyed = _KEYED
    for gram in {padded[i : i + 3] for i in range(len(padded) - 2)}:
        for w, name in keyed.get(gram, ()):
            if name not in found and w in padded:
                found.add(name)
    if _SINK_TARGET.search(lowered):
        found.add("sink_target")
    if _IMPERATIVE.search(lowered):
        found.add("imperative")
    found.update(f"{a}&{b}" for a, b in CONJUNCTIONS if a in found and b in found)
    return frozenset(found)


def is_gated(cues: frozenset[str]) -> bool:
    """Whether a passage with these cues is read by the learned scorer."""
    return bool(cues & GATE_CUES) or any(f"{a}&{b}" in cues for a, b in _GATE_PAIRS)


def gate_words() -> tuple[str, ...]:
    """Substrings without one of which no passage is gated (the result guard's first filter): the gate
    cues' words and the other-tool words (the rest of the gate pairs always need a URL or a parameter,
    whose markers are among them)."""
    words = [w.strip() or w for cue in sorted(GATE_CUES) for w in _LEXICON[cue]]
    words += [w.strip() for w in _LEXICON["other_tool"]]
    words += ["http", "www.", "@", "parameter", "argument", "field"]
    return tuple(dict.fromkeys(w for w in words if w))
