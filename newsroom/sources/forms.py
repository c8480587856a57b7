from __future__ import annotations

import re

from django import forms

from newsroom.sources.discovery import InvalidURL, normalise_url
from newsroom.sources.models import Category, Source


class FieldLayout:
    """Label, input, then what is wrong, then the hint: errors sit next to the input."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.template_name = "newsroom/forms/field.html"


def clean_address(value: str) -> str:
    try:
        return normalise_url(value)
    except InvalidURL as e:
        raise forms.ValidationError(str(e)) from None


def clean_pattern(value: str) -> str:
    value = value.strip()
    if not value:
        return ""
    try:
        re.compile(value)
    except re.error as e:
        raise forms.ValidationError(
            f"This is not a valid regular expression: {e}. Example: /news/\\d{{4}}/"
        ) from None
    return value


class ReaderCategoryField(forms.ModelChoiceField):
    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("empty_label", "Uncategorised")
        super().__init__(queryset=Category.objects.none(), **kwargs)


class AddSourceForm(FieldLayout, forms.Form):
    url = forms.CharField(
        label="Site or feed address",
        max_length=2000,
        widget=forms.TextInput(
            attrs={"placeholder": "https://example.org or https://example.org/feed.xml"}
        ),
    )
    kind = forms.ChoiceField(
        choices=Source.Kind.choices,
        initial=Source.Kind.FEED,
        help_text="Feed: we find the site's feed. Pages: we collect their links.",
    )
    category = ReaderCategoryField()
    link_pattern = forms.CharField(
        required=False,
        max_length=500,
        help_text="Scraped and browser pages: a regular expression; links whose address "
        "matches become items. Empty: every link on the page.",
    )

    def __init__(self, *args, reader, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reader = reader
        self.fields["category"].queryset = Category.objects.filter(reader=reader)

    def clean_url(self) -> str:
        return clean_address(self.cleaned_data["url"])

    def clean_link_pattern(self) -> str:
        return clean_pattern(self.cleaned_data.get("link_pattern", ""))

    def clean(self):
        data = super().clean()
        url = data.get("url")
        if url and data.get("kind") != Source.Kind.FEED:
            if Source.objects.filter(reader=self.reader, url=url).exists():
                self.add_error("url", "You already have a source with this address.")
        return data


class ChooseFeedsForm(FieldLayout, forms.Form):
    """The second step when a page offers several feeds: which ones to add."""

    feeds = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Tick at least one feed to add."},
    )
    category = ReaderCategoryField()

    def __init__(self, *args, reader, choices: list[tuple[str, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["feeds"].choices = choices
        self.fields["category"].queryset = Category.objects.filter(reader=reader)


class SourceForm(FieldLayout, forms.ModelForm):
    # A plain text field: clean_url normalises (bare hosts get https://) and checks.
    url = forms.CharField(label="Address", max_length=2000)
    category = ReaderCategoryField()

    class Meta:
        model = Source
        fields = ["title", "url", "kind", "category", "link_pattern"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["category"].queryset = Category.objects.filter(
            reader=self.instance.reader
        )
        self.fields["title"].help_text = "Empty: the address is shown."

    def clean_url(self) -> str:
        url = clean_address(self.cleaned_data["url"])
        taken = Source.objects.filter(reader=self.instance.reader, url=url).exclude(
            pk=self.instance.pk
        )
        if taken.exists():
            raise forms.ValidationError(
                "You already have another source with this address."
            )
        return url

    def clean_link_pattern(self) -> str:
        return clean_pattern(self.cleaned_data.get("link_pattern", ""))

    def validate_unique(self) -> None:
        # The reader is not a form field; uniqueness per reader is checked in clean_url.
        pass

    def save(self, commit: bool = True) -> Source:
        source = super().save(commit=False)
        if {"url", "kind", "link_pattern"} & set(self.changed_data):
            # A different address or way of fetching: the old health and the
            # conditional-request validators describe something else now.
            source.reset_health()
        if commit:
            source.save()
        return source


class CategoryForm(FieldLayout, forms.ModelForm):
    class Meta:
        model = Category
        fields = ["name", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, reader, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reader = reader

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the category a name.")
        taken = Category.objects.filter(reader=self.reader, name__iexact=name)
        if self.instance.pk:
            taken = taken.exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError(f"You already have a category named {name!r}.")
        return name

    def validate_unique(self) -> None:
        pass


class OpmlUploadForm(FieldLayout, forms.Form):
    file = forms.FileField(
        label="OPML file",
        widget=forms.ClearableFileInput(
            attrs={"accept": ".opml,.xml,text/x-opml,text/xml"}
        ),
        help_text="An .opml or .xml export from another reader, up to 5 MB.",
    )
